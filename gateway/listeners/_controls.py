"""The controls every surface shares: `/agent`, in-thread `!words`, buttons, the shortcut.

Each returns the sentence to show the person who acted (ephemerally). Who may act is decided
here; `jobs.control` records what was done and tells the thread through notices.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from gateway.deps import Deps
from jobs import control
from jobs.keys import SessionKey
from jobs.quotas import budget_quotas, working_quota
from jobs.session.feedback import SHOWN_LATEST, Feedback
from jobs.session.state import session_exists
from jobs.usage import prices, utc_day

Verb = Literal["cancel", "resume", "status", "compact"]

_VOTE_EMOJI = {"up": "👍", "down": "👎"}
NO_SESSION = "There is no agent session in that thread."
THREAD_WORDS: dict[str, Verb] = {
    "!stop": "cancel",
    "!cancel": "cancel",
    "!resume": "resume",
    "!status": "status",
    "!compact": "compact",
}


def thread_word(text: str) -> Verb | None:
    """`!stop` and friends, when a message starts with one (anything after it is ignored)."""
    first = text.strip().split(maxsplit=1)[0].lower() if text.strip() else ""
    return THREAD_WORDS.get(first)


def act(deps: Deps, verb: Verb, key: SessionKey, user: str) -> str:
    if not session_exists(deps.redis, key):
        return NO_SESSION
    if verb == "status":
        return describe(control.status(deps.redis, key, prices(deps.settings)))
    if not deps.authz.may_act(key, user):
        return deps.authz.refusal(key)
    if verb == "cancel":
        return control.cancel(deps.redis, key, by=user).message
    if verb == "resume":
        working = working_quota(deps.settings, key.team, user)
        budgets = budget_quotas(deps.settings, key, user, utc_day())
        resumed = control.resume(
            deps.redis, key, by=user, turn_timeout_s=deps.turn_timeout_s, working=working, budgets=budgets
        )
        return resumed.message
    return control.request_compaction(deps.redis, key, by=user, turn_timeout_s=deps.turn_timeout_s).message


_STATE_WORDS = {
    "idle": "idle (waiting for a reply in the thread)",
    "queued": "queued (a turn starts shortly)",
    "running": "running",
    "awaiting_approval": "waiting for an approval",
    "awaiting_agents": "waiting for its sub-agents",
    "cancelled": "stopped (resume to continue)",
    "interrupted": "interrupted (the worker stopped; resume to continue)",
    "failed": "failed (resume to try again)",
}


def describe(status: control.SessionStatus) -> str:
    parts = [f"State: {_STATE_WORDS.get(status.state, status.state)}"]
    if status.owner:
        parts.append(f"started by <@{status.owner}>")
    if status.waiting_inputs:
        parts.append(_count(status.waiting_inputs, "message", "waiting to be read"))
    if status.pending_approvals:
        parts.append(_count(status.pending_approvals, "call", "waiting for approval"))
    if status.last_turn_reason:
        parts.append(f"last turn: {status.last_turn_reason}")
    if status.usage:
        parts.append(f"model usage: {status.usage}")
    return " · ".join(parts) + "." + _feedback(status.feedback)


def _feedback(ratings: list[Feedback]) -> str:
    """The tally of 👍/👎 on answers, and the latest ratings: who, which, when."""
    if not ratings:
        return ""
    ups = sum(1 for one in ratings if one.vote == "up")
    latest = ", ".join(
        f"{_VOTE_EMOJI[one.vote]} <@{one.user}> <!date^{int(one.at)}^{{date_short}} {{time}}|{_utc(one.at)}>"
        for one in reversed(ratings[-SHOWN_LATEST:])
    )
    return f"\nFeedback on answers: 👍 {ups} · 👎 {len(ratings) - ups} (latest: {latest})."


def _utc(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _count(number: int, noun: str, tail: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'} {tail}"
