"""`message`: follow-ups in a session's thread, DMs, and edits/deletes of waiting input.

Handled on purpose (README "Message subtypes"): plain messages, `thread_broadcast` (a reply
also sent to the channel), `file_share` (the text with the file names noted, and the files for
the worker to download, jobs.turn.uploads), `bot_message` from bots in SLACK_ALLOWED_BOTS, and
`message_changed` / `message_deleted` (gateway.listeners._edits).
Every other subtype (joins, topic changes, huddles, …) is ignored.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from slack_bolt import App, BoltContext

from gateway import payload
from gateway.deps import Deps
from gateway.listeners import _edits
from gateway.listeners._inbound import SlackInput, author, take
from gateway.threads import session_key_for, strip_bot_mention

log = logging.getLogger(__name__)

NEW_MESSAGE_SUBTYPES = frozenset({None, "thread_broadcast", "file_share", "bot_message"})
_LEADING_MENTION = re.compile(r"^\s*<@([A-Z0-9]+)(\|[^>]*)?>")


def register(app: App, deps: Deps) -> None:
    @app.event("message")
    def on_message(body: dict[str, Any], event: dict[str, Any], context: BoltContext) -> None:
        subtype = payload.optional_text(event, "subtype")
        if subtype == "message_changed":
            return _edits.on_changed(deps, body, event, context)
        if subtype == "message_deleted":
            return _edits.on_deleted(deps, body, event)
        if subtype not in NEW_MESSAGE_SUBTYPES:
            return
        said = _said_in(deps, body, event, context)
        if said is not None:
            log.info("message %s in %s → %s", body.get("event_id"), said.key, take(deps, said))


def _said_in(
    deps: Deps, body: Mapping[str, Any], event: Mapping[str, Any], context: BoltContext
) -> SlackInput | None:
    """The message as input, or None when it is not for the agent."""
    user = author(deps, event, context)
    if user is None:
        return None
    ts, channel = payload.text(event, "ts"), payload.text(event, "channel")
    thread_ts = payload.optional_text(event, "thread_ts")
    is_dm = event.get("channel_type") == "im"
    if not is_dm and (thread_ts is None or thread_ts == ts):
        return None  # a top-level channel message: only a mention starts a session there
    raw = event.get("text") or ""
    if not isinstance(raw, str):
        raise payload.InvalidPayload("event.text is not a string")
    if not is_dm and _addressed_to_someone_else(raw, context.bot_user_id):
        return None
    files = payload.shared_files(event)
    return SlackInput(
        key=session_key_for(payload.team_id(body, context.team_id), channel, event),
        user=user,
        ts=ts,
        text=payload.with_file_names(strip_bot_mention(raw, context.bot_user_id), files),
        files=files,
        event_id=payload.optional_text(body, "event_id"),
        addressed=is_dm,
        mentions_agent=bool(context.bot_user_id) and f"<@{context.bot_user_id}>" in raw,
        user_team=payload.optional_text(event, "user_team"),
    )


def _addressed_to_someone_else(text: str, bot_user_id: str | None) -> bool:
    """A reply that opens by mentioning another person is talk between people, not for the agent."""
    match = _LEADING_MENTION.match(text)
    return match is not None and match.group(1) != bot_user_id and f"<@{bot_user_id}>" not in text
