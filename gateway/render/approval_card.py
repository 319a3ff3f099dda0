"""The approval card: a person approves only a call the card shows them whole.

The card carries the call's full arguments as code sections, in the card itself: no file to
open, no tail left for a click. One Slack message holds about `MESSAGE_CHARS` of block text
(gateway.render.text), so a call too long for that is never cut silently: its card shows the
start, says it is too long to show, and offers Deny only. The Approve click is checked the
same way (`shows_whole_call`, from gateway.listeners.actions), so an old or forged button
cannot approve what nobody saw. Characters a reader cannot see (controls, bidi overrides,
zero-width spaces) are spelled out, so they cannot hide or reorder part of the call either.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from gateway.render import buttons
from gateway.render.notices import SlackMessage
from gateway.render.text import (
    MAX_BLOCKS,
    MESSAGE_CHARS,
    block_chars,
    code_blocks,
    context,
    escape,
    inline_code,
    section,
)
from jobs.keys import SessionKey
from jobs.session.notices import ApprovalDecidedNotice, ApprovalRequestNotice

# Sized so a card decided later (its verdict replacing the buttons) still fits MESSAGE_CHARS.
CARD_CHARS = MESSAGE_CHARS - 500
PREVIEW_CHARS = 1_500  # the start of a call too long to approve, so the person knows what to deny
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs"})
SHOWN_AS_IS = frozenset("\n\t")

_DECISIONS = {
    "approved": ":white_check_mark: Approved",
    "denied": ":no_entry_sign: Denied",
    "cancelled": ":black_square_for_stop: Cancelled",
    "expired": ":hourglass: Expired: nobody decided in time, so it was denied",
}

Blocks = list[dict[str, Any]]


def approval_request(notice: ApprovalRequestNotice, session: SessionKey) -> SlackMessage:
    value = buttons.ButtonValue(session, approval_id=notice.approval_id)
    deny = buttons.button(buttons.DENY, "Deny", value, style="danger")
    whole = _whole_call(notice)
    if whole is None:
        text = f"{_question(notice, asking=False)} {too_long_text(notice)}"
        return SlackMessage(text=text, blocks=[*_too_long(notice), buttons.actions(deny)])
    approve = buttons.button(buttons.APPROVE, "Approve", value, style="primary")
    return SlackMessage(text=_question(notice), blocks=[*whole, buttons.actions(approve, deny)])


def approval_decided(notice: ApprovalDecidedNotice, request: ApprovalRequestNotice | None) -> SlackMessage:
    """The approval card once decided: the call stays readable, the buttons give way to the verdict."""
    verdict = _DECISIONS[notice.decision] + (f" by <@{notice.by}>" if notice.by else "")
    if request is None:
        return SlackMessage(text=f"{verdict} (approval `{escape(notice.approval_id)}`).")
    shown = _whole_call(request) or _too_long(request)
    return SlackMessage(text=f"{_question(request)}\n{verdict}", blocks=[*shown, context(verdict)])


def shows_whole_call(notice: ApprovalRequestNotice) -> bool:
    """Whether this request's card shows every character of the call (and so may be approved)."""
    return _whole_call(notice) is not None


def too_long_text(notice: ApprovalRequestNotice) -> str:
    size = len(notice.details or "")
    return (
        f"It is too long to show in full here ({size:,} characters), so it cannot be approved from "
        "Slack: deny it, and ask the agent for shorter calls."
    )


def visible(text: str) -> str:
    """`text` with every character a reader would not see spelled out as ⟦U+XXXX⟧."""
    return "".join(
        f"⟦U+{ord(char):04X}⟧"
        if char not in SHOWN_AS_IS and unicodedata.category(char) in HIDDEN_CATEGORIES
        else char
        for char in text
    )


def _whole_call(notice: ApprovalRequestNotice) -> Blocks | None:
    """The card's blocks above its buttons when they show the whole call, else None."""
    if notice.details is None:  # only the summary, which is cut: not the whole call
        return None
    body = code_blocks(visible(notice.details)) if notice.details.strip() else []
    blocks = [section(_question(notice)), *body, *_reason(notice)]
    if len(blocks) + 1 > MAX_BLOCKS or block_chars(blocks) > CARD_CHARS:
        return None
    return blocks


def _too_long(notice: ApprovalRequestNotice) -> Blocks:
    start = (notice.details or "")[:PREVIEW_CHARS]
    warning = f":warning: Only its first {len(start):,} characters are shown. {too_long_text(notice)}"
    preview = code_blocks(visible(start))
    return [section(_question(notice, asking=False)), *preview, section(escape(warning)), *_reason(notice)]


def _reason(notice: ApprovalRequestNotice) -> Blocks:
    return [context(escape(notice.reason))] if notice.reason else []


def _question(notice: ApprovalRequestNotice, *, asking: bool = True) -> str:
    call = f"`{escape(notice.tool_name)}` {inline_code(visible(notice.summary))}".strip()
    return f":raised_hand: The agent wants to run {call}." + (" Approve?" if asking else "")
