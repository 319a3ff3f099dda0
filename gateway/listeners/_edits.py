"""`message_changed` / `message_deleted`: change or withdraw input the agent has not read yet.

Input waits in the inbox while a turn runs. An edit to a waiting message replaces its text and
a delete withdraws it, and the thread says so; when the agent already read the message, the
author alone is told (ephemerally) that the change did not reach it. A reply held until its
thread's session starts (jobs.session.early) is changed where it is held, silently: there is
no session to tell yet.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from slack_bolt import BoltContext

from gateway import payload
from gateway.deps import Deps
from gateway.listeners._inbound import tell
from gateway.thread_context import READ_BUDGET_S
from gateway.threads import session_key_for, strip_bot_mention
from jobs.keys import SessionKey
from jobs.mentions import for_model, mentioned_ids
from jobs.queues import schedule_delivery
from jobs.session.dedupe import claim, delivery_keys, release
from jobs.session.early import change_held
from jobs.session.inbox import Outcome, change_of
from jobs.session.notices import InfoNotice
from jobs.session.state import session_exists
from jobs.session.store import SessionStore

log = logging.getLogger(__name__)

EDITED = "<@{user}> edited a message before the agent read it; the agent will read the new version."
WITHDRAWN = "<@{user}> deleted a message before the agent read it; it was withdrawn."
EDIT_TOO_LATE = (
    "The agent had already read that message, so your edit did not reach it. "
    "Reply in the thread to correct it."
)
DELETE_TOO_LATE = "The agent had already read that message; deleting it does not take it back."


def on_changed(deps: Deps, body: Mapping[str, Any], event: Mapping[str, Any], context: BoltContext) -> None:
    message = payload.section(event, "message")
    previous = event.get("previous_message") or {}
    if message.get("bot_id") or message.get("subtype") or not isinstance(previous, Mapping):
        return  # the agent's own edits, thread-title changes of assistant threads
    new_text = message.get("text")
    if not isinstance(new_text, str) or new_text == previous.get("text"):
        return  # unfurls and reply counts change a message without changing what it says
    ts = payload.text(message, "ts")
    key = session_key_for(payload.team_id(body, context.team_id), payload.text(event, "channel"), message)
    user = payload.text(message, "user")
    text = strip_bot_mention(new_text, context.bot_user_id)
    # People by name, as in the text it replaces (gateway.listeners._context).
    text = for_model(text, deps.people.names(key.team, mentioned_ids(text), time.monotonic() + READ_BUDGET_S))
    if _changed_held(deps, key, ts, text):
        return
    _apply(deps, body, event, key, lambda store: change_of(store, ts, text=text), user, EDITED, EDIT_TOO_LATE)


def on_deleted(deps: Deps, body: Mapping[str, Any], event: Mapping[str, Any]) -> None:
    previous = event.get("previous_message")
    if not isinstance(previous, Mapping) or previous.get("bot_id"):
        return
    ts = payload.text(event, "deleted_ts")
    key = session_key_for(payload.team_id(body, None), payload.text(event, "channel"), previous, ts=ts)
    user = payload.optional_text(previous, "user")
    if _changed_held(deps, key, ts, None):
        return
    if user is not None:
        change = lambda store: change_of(store, ts, text=None)  # noqa: E731
        _apply(deps, body, event, key, change, user, WITHDRAWN, DELETE_TOO_LATE)


def _changed_held(deps: Deps, key: SessionKey, ts: str, text: str | None) -> bool:
    """Edit or withdraw a reply held before its session; False when none is held (the usual case)."""
    changed = change_held(deps.redis, key, ts, text)
    if changed:
        log.info("held reply %s in %s %s", ts, key, "withdrawn" if text is None else "edited")
    return changed


def _apply(
    deps: Deps,
    body: Mapping[str, Any],
    event: Mapping[str, Any],
    key: SessionKey,
    change: Callable[[SessionStore], Outcome],
    user: str,
    changed: str,
    too_late: str,
) -> None:
    if not session_exists(deps.redis, key):
        return
    keys = delivery_keys(key.team, payload.optional_text(body, "event_id"), key.channel, event.get("ts"))
    claimed = claim(deps.redis, keys)
    if not claimed.fresh:
        return
    try:
        _report(deps, key, user, change(SessionStore(deps.redis, key)), changed, too_late)
    except Exception:
        release(deps.redis, claimed)
        raise


def _report(deps: Deps, key: SessionKey, user: str, outcome: Outcome, changed: str, too_late: str) -> None:
    log.info("edit/delete by %s in %s → %s", user, key, outcome)
    if outcome == "changed":
        SessionStore(deps.redis, key).post_notice(InfoNotice(text=changed.format(user=user)))
        schedule_delivery(deps.redis, key)
    elif outcome == "already_read":
        tell(deps, key, user, too_late)
