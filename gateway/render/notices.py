"""Every notice kind of jobs.session.notices as the Slack message a person sees.

Answers are Markdown (`markdown_text`, split by gateway.render.markdown); everything else is a
short mrkdwn message, with buttons where there is something to do: Resume and Inspect on an
unknown result, Resume on a stop. The approval card has a module of its own (approval_card).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.render import buttons
from gateway.render.text import context, escape, inline_code, section, shorten
from jobs.keys import SessionKey
from jobs.session.notices import (
    CancelledNotice,
    CompactionNotice,
    ErrorNotice,
    InfoNotice,
    PullRequestNotice,
    UnknownResultNotice,
)

CI_SHOWN = {
    "pending": ":hourglass_flowing_sand: CI running",
    "success": ":white_check_mark: CI passed",
    "failure": ":x: CI failed",
    "error": ":x: CI errored",
}


@dataclass(frozen=True)
class SlackMessage:
    """Arguments of chat.postMessage / chat.update: `markdown` excludes `text` and `blocks`."""

    text: str | None = None
    blocks: list[dict[str, Any]] = field(default_factory=list)
    markdown: str | None = None

    def arguments(self) -> dict[str, Any]:
        if self.markdown is not None:
            return {"markdown_text": self.markdown}
        arguments: dict[str, Any] = {"text": self.text or " "}
        if self.blocks:
            arguments["blocks"] = self.blocks
        return arguments


def unknown_result(notice: UnknownResultNotice, session: SessionKey) -> SlackMessage:
    call = f"`{escape(notice.tool_name)}` {inline_code(notice.summary)}".strip()
    text = (
        f":grey_question: The outcome of {call} is unknown: the run stopped before its result was "
        "recorded. Nothing was re-run."
    )
    value = buttons.ButtonValue(session, tool_call_id=notice.tool_call_id)
    controls = buttons.actions(
        buttons.button(buttons.RESUME, "Resume", buttons.ButtonValue(session), style="primary"),
        buttons.button(buttons.INSPECT, "Inspect", value),
    )
    return SlackMessage(text=text, blocks=[section(text), controls])


def cancelled(notice: CancelledNotice, session: SessionKey) -> SlackMessage:
    resume = buttons.button(buttons.RESUME, "Resume", buttons.ButtonValue(session), style="primary")
    shown = section(f":black_square_for_stop: {notice.text}")
    return SlackMessage(text=notice.text, blocks=[shown, buttons.actions(resume)])


def compaction(notice: CompactionNotice) -> SlackMessage:
    if notice.state == "started":
        return SlackMessage(text=":compression: Compacting the conversation…")
    if notice.state == "failed":
        reason = escape(notice.detail or "unknown error")
        return SlackMessage(text=f":warning: Compaction failed; kept the full history. ({reason})")
    if notice.state == "pruned":
        return SlackMessage(text=_pruned_text(notice))
    numbers = [f"{notice.compacted} messages → 1 summary"] if notice.compacted is not None else []
    if notice.tokens_before is not None and notice.tokens_after is not None:
        numbers.append(f"{notice.tokens_before:,} → {notice.tokens_after:,} tokens")
    text = f":compression: Compacted: {', '.join(numbers) or 'done'}."
    if notice.dropped:
        text += " " + _dropped_text(notice.dropped)
    return SlackMessage(text=text)


def _pruned_text(notice: CompactionNotice) -> str:
    outputs = f"{notice.pruned} old tool output{'s' if notice.pruned != 1 else ''}"
    tokens = ""
    if notice.tokens_before is not None and notice.tokens_after is not None:
        tokens = f" ({notice.tokens_before:,} → {notice.tokens_after:,} tokens)"
    return f":scissors: Pruned {outputs} to keep the context small{tokens}; the agent can read them again."


def _dropped_text(count: int) -> str:
    if count == 1:
        return "The oldest message did not fit the summary request and is not in the summary."
    return f"The {count} oldest messages did not fit the summary request and are not in the summary."


def error(notice: ErrorNotice) -> SlackMessage:
    return SlackMessage(text=notice.text)


def info(notice: InfoNotice) -> SlackMessage:
    return SlackMessage(text=notice.text)


def pull_request(notice: PullRequestNotice) -> SlackMessage:
    """The thread's pull request card: link, branch, changes, CI and conflicts as last seen."""
    title = escape(shorten(notice.title))
    heading = f"*{notice.reference} {title}*"
    if notice.url.startswith(("https://", "http://")) and not any(c in notice.url for c in "|<> "):
        heading = f"*<{notice.url}|{notice.reference} {title}>*"
    where = f"{inline_code(notice.branch)} → {inline_code(notice.base)} on {escape(notice.repo)}"
    noun = notice.noun.capitalize()
    lines = [f":twisted_rightwards_arrows: {noun} {heading}", f"{where} · {escape(notice.stat)}"]
    if notice.ci is not None:
        lines.append(CI_SHOWN.get(notice.ci, f"CI: {escape(notice.ci)}"))
    if notice.conflicts:
        lines.append(f":warning: The branch conflicts with {inline_code(notice.base)}.")
    pushes = "1 push" if notice.pushes == 1 else f"{notice.pushes} pushes"
    text = f"{noun} {notice.reference}: {notice.url}"
    return SlackMessage(text=text, blocks=[section("\n".join(lines)), context(f"{pushes} from this thread")])
