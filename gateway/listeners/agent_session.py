"""`agent_session_stopped`: Slack's own Stop button on an agent session in "processing"."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App, BoltContext

from gateway import payload
from gateway.deps import Deps
from gateway.listeners._controls import act
from gateway.listeners._inbound import tell
from jobs.session.dedupe import claim, delivery_keys

log = logging.getLogger(__name__)


def register(app: App, deps: Deps) -> None:
    @app.event("agent_session_stopped")
    def on_stopped(body: dict[str, Any], event: dict[str, Any], context: BoltContext) -> None:
        team, channel = payload.team_id(body, context.team_id), payload.text(event, "channel")
        key = payload.session_key(team, channel, payload.text(event, "thread_ts"))
        user = payload.text(event, "user")
        if not claim(deps.redis, delivery_keys(key.team, body.get("event_id"), None, None)).fresh:
            return
        outcome = act(deps, "cancel", key, user)
        log.info("native stop by %s on %s → %s", user, key, outcome)
        tell(deps, key, user, outcome)
