"""Button clicks: Stop, Resume, Approve / Deny, Inspect, each answered to the clicker alone.

The answer goes to the click's `response_url` as an ephemeral message (the card itself changes
through notices, for everyone). A second click on a decided approval is a no-op that says so.
Approve is refused unless the request's card showed the whole call (gateway.render.approval_card);
Deny always works. A click acts once: a replay of it (the same `action_ts`, button and person)
is answered as such and changes nothing. Inspect shows what one ephemeral message holds, and
says when it is cut, to the channel's members, the initiator and operators only (`Authz.may_see`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from slack_bolt import Ack, App, Respond

from gateway import payload
from gateway.authz import NOT_A_MEMBER
from gateway.delivery.ledger import Ledger
from gateway.delivery.notices import shown_request
from gateway.delivery.streams import answered_turn_note
from gateway.deps import Deps
from gateway.listeners._controls import act
from gateway.render import buttons
from gateway.render.approval_card import shows_whole_call, too_long_text
from gateway.render.feedback import FEEDBACK, FeedbackValue
from gateway.render.text import code_sections
from jobs import log_context
from jobs.control import decide_approval
from jobs.keys import SessionKey, action_dedupe_key
from jobs.session.approvals import Decision
from jobs.session.dedupe import claim, release
from jobs.session.feedback import record_feedback
from jobs.session.state import session_exists
from jobs.session.store import SessionStore

log = logging.getLogger(__name__)

STALE = "That button no longer belongs to a session here."
REPLAYED = "That click was already received; it was not done again."
THANKS = "Thanks, your feedback on that answer was recorded."
NOT_SHOWN = "Not approved: that request's card was never shown in this thread."
Handler = Callable[[Deps, buttons.ButtonValue, str], str | list[dict[str, Any]]]


def register(app: App, deps: Deps) -> None:
    handlers: dict[str, Handler] = {
        buttons.STOP: lambda d, v, user: act(d, "cancel", v.session, user),
        buttons.RESUME: lambda d, v, user: act(d, "resume", v.session, user),
        buttons.APPROVE: lambda d, v, user: _decide(d, v, user, "approved"),
        buttons.DENY: lambda d, v, user: _decide(d, v, user, "denied"),
        buttons.INSPECT: _inspect,
    }
    for action_id, handler in handlers.items():
        app.action(action_id)(_listener(deps, handler))
    app.action(FEEDBACK)(_feedback_listener(deps))


def _feedback_listener(deps: Deps) -> Callable[..., None]:
    """👍/👎 under an answer: recorded against its turn for people who may see the thread."""

    def on_feedback(ack: Ack, body: dict[str, Any], action: dict[str, Any], respond: Respond) -> None:
        ack()
        user = payload.text(payload.section(body, "user"), "id")
        value = FeedbackValue.decode(action.get("value"))
        if value is None or not _rates_this_thread(deps, body, value):
            return _tell(respond, STALE)
        if not deps.authz.may_see(value.session, user):
            return _tell(respond, NOT_A_MEMBER)
        record_feedback(deps.redis, value.session, value.turn_id, user, value.vote)
        log.info("feedback %s by %s on turn %s of %s", value.vote, user, value.turn_id, value.session)
        _tell(respond, THANKS)

    return on_feedback


def _rates_this_thread(deps: Deps, body: Mapping[str, Any], value: FeedbackValue) -> bool:
    """The value names the thread the buttons are in, and an answer threadline streamed there."""
    container = body.get("container")
    container = container if isinstance(container, Mapping) else {}
    session = value.session
    return (
        session.team == _team(body)
        and session.channel == container.get("channel_id")
        and session.thread_ts == container.get("thread_ts")
        and bool(Ledger(SessionStore(deps.redis, session)).note(answered_turn_note(value.turn_id)))
    )


def _listener(deps: Deps, handler: Handler) -> Callable[..., None]:
    def on_click(ack: Ack, body: dict[str, Any], action: dict[str, Any], respond: Respond) -> None:
        ack()
        user = payload.text(payload.section(body, "user"), "id")
        value = buttons.ButtonValue.decode(action.get("value"))
        if value is None or value.session.team != _team(body):
            return _tell(respond, STALE)
        log_context.bind(**log_context.session_fields(value.session))
        keys = _click_keys(value.session.team, user, action)
        claimed = claim(deps.redis, keys)
        if not claimed.fresh:
            return _tell(respond, REPLAYED)
        try:
            outcome = handler(deps, value, user)
        except Exception:
            release(deps.redis, claimed)  # not done: a retry may do it
            raise
        log.info("%s by %s on %s", action.get("action_id"), user, value.session)
        _tell(respond, outcome)

    return on_click


def _click_keys(team: str, user: str, action: Mapping[str, Any]) -> list[str]:
    """The click's dedupe key; none when Slack sent no `action_ts` (nothing names the click)."""
    action_ts = action.get("action_ts")
    if not isinstance(action_ts, str) or not action_ts:
        return []
    return [action_dedupe_key(team, user, str(action.get("action_id")), action_ts)]


def _team(body: Mapping[str, Any]) -> str | None:
    team = body.get("team")
    team_id = team.get("id") if isinstance(team, Mapping) else None
    if isinstance(team_id, str):
        return team_id
    return payload.optional_text(payload.section(body, "user"), "team_id")


def _tell(respond: Respond, outcome: str | list[dict[str, Any]]) -> None:
    if not respond.response_url:  # some surfaces' clicks carry none: the click acted, unanswered
        log.info("click without a response_url: its answer is not shown")
        return
    if isinstance(outcome, str):
        respond(text=outcome, response_type="ephemeral", replace_original=False)
    else:
        respond(text="Tool call arguments", blocks=outcome, response_type="ephemeral", replace_original=False)


def _decide(deps: Deps, value: buttons.ButtonValue, user: str, decision: Decision) -> str:
    key = value.session
    if not value.approval_id or not session_exists(deps.redis, key):
        return STALE
    if not deps.authz.may_approve(key, user):
        return deps.authz.approval_refusal(key)
    if decision == "approved" and (refusal := _unseen(deps, key, value.approval_id)):
        return refusal
    return decide_approval(
        deps.redis, key, value.approval_id, decision, by=user, turn_timeout_s=deps.turn_timeout_s
    ).message


def _unseen(deps: Deps, key: SessionKey, approval_id: str) -> str | None:
    """Why this call cannot be approved from Slack: its card did not show all of it. None: it did."""
    request = shown_request(Ledger(SessionStore(deps.redis, key)), approval_id)
    if request is None:
        return NOT_SHOWN
    return None if shows_whole_call(request) else f"Not approved. {too_long_text(request)}"


def _inspect(deps: Deps, value: buttons.ButtonValue, user: str) -> str | list[dict[str, Any]]:
    if not deps.authz.may_see(value.session, user):
        return NOT_A_MEMBER
    arguments = _tool_call_arguments(SessionStore(deps.redis, value.session), value.tool_call_id or "")
    if arguments is None:
        return "That call is not in the session's history any more."
    name, text = arguments
    return code_sections(f"Arguments of `{name}` (call `{value.tool_call_id}`):", text)


def _tool_call_arguments(store: SessionStore, tool_call_id: str) -> tuple[str, str] | None:
    """The tool's name and its full arguments as the model sent them, from the wire log."""
    for record in store.read_wire():
        event = record.get("event") if record.get("type") == "context.append_loop_event" else None
        if not isinstance(event, dict) or event.get("type") != "tool.call":
            continue
        if event.get("tool_call_id") == tool_call_id:
            raw = event.get("arguments")
            text = (
                raw if isinstance(raw, str) else json.dumps(event.get("args"), indent=2, ensure_ascii=False)
            )
            return str(event.get("name")), text
    return None
