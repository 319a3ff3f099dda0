"""`app_mention`: a mention starts (or continues) the thread's session."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App, BoltContext

from gateway.deps import Deps
from gateway.inbound import Said, take
from gateway.threads import strip_bot_mention

log = logging.getLogger(__name__)


def register(app: App, deps: Deps) -> None:
    @app.event("app_mention")
    def on_mention(body: dict[str, Any], event: dict[str, Any], context: BoltContext) -> None:
        said = Said(
            team=body.get("team_id") or context.team_id or "",
            channel=event["channel"],
            user=event.get("user") or event.get("bot_id") or "",
            ts=event["ts"],
            thread_ts=event.get("thread_ts"),
            text=strip_bot_mention(event.get("text", ""), context.bot_user_id),
            event_id=body.get("event_id"),
            addressed=True,
        )
        log.info("mention %s in %s → %s", body.get("event_id"), said.key, take(deps, said))
