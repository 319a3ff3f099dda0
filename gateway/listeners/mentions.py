"""`app_mention`: a mention starts (or continues) the thread's session."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App, BoltContext

from gateway import payload
from gateway.deps import Deps
from gateway.listeners._inbound import SlackInput, author, take
from gateway.threads import session_key_for, strip_bot_mention

log = logging.getLogger(__name__)


def register(app: App, deps: Deps) -> None:
    @app.event("app_mention")
    def on_mention(body: dict[str, Any], event: dict[str, Any], context: BoltContext) -> None:
        user = author(deps, event, context)
        if user is None:
            return
        team, channel = payload.team_id(body, context.team_id), payload.text(event, "channel")
        files = payload.shared_files(event)
        said = SlackInput(
            key=session_key_for(team, channel, event),
            user=user,
            ts=payload.text(event, "ts"),
            text=payload.with_file_names(
                strip_bot_mention(payload.optional_text(event, "text") or "", context.bot_user_id), files
            ),
            files=files,
            event_id=payload.optional_text(body, "event_id"),
            addressed=True,
            user_team=payload.optional_text(event, "user_team"),
            agent_user=context.bot_user_id,
        )
        log.info("mention %s in %s → %s", body.get("event_id"), said.key, take(deps, said))
