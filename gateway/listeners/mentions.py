"""`app_mention`: a mention starts (or continues) the thread's session."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App, BoltContext

from gateway.threads import session_key_for, strip_bot_mention
from jobs.control import submit_input
from jobs.inbound import UserInput
from jobs.settings import Settings

log = logging.getLogger(__name__)


def register(app: App, settings: Settings, redis: Any) -> None:
    @app.event("app_mention")
    def on_mention(body: dict[str, Any], event: dict[str, Any], context: BoltContext) -> None:
        team_id = body.get("team_id") or context.team_id or ""
        key = session_key_for(team_id, event)
        user_input = UserInput(
            text=strip_bot_mention(event.get("text", ""), context.bot_user_id),
            user=event.get("user", ""),
            ts=event["ts"],
            event_id=body.get("event_id"),
        )
        where = submit_input(redis, key, user_input, turn_timeout_s=settings.TURN_TIMEOUT_SECONDS)
        log.info("mention %s in %s → %s", body.get("event_id"), key, where)
