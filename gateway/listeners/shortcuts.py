"""The message shortcut "Stop agent run" (⋯ on any message of the thread)."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import Ack, App, Respond

from gateway import payload
from gateway.deps import Deps
from gateway.listeners.controls import act
from gateway.render.buttons import STOP_SHORTCUT
from jobs.keys import SessionKey

log = logging.getLogger(__name__)


def register(app: App, deps: Deps) -> None:
    @app.shortcut(STOP_SHORTCUT)
    def on_stop(ack: Ack, body: dict[str, Any], respond: Respond) -> None:
        ack()
        message = payload.section(body, "message")
        ts = payload.text(message, "ts")
        key = SessionKey(
            team=payload.text(payload.section(body, "team"), "id"),
            channel=payload.text(payload.section(body, "channel"), "id"),
            thread_ts=payload.optional_text(message, "thread_ts") or ts,
        )
        user = payload.text(payload.section(body, "user"), "id")
        outcome = act(deps, "cancel", key, user)
        log.info("stop shortcut by %s on %s → %s", user, key, outcome)
        respond(text=outcome, response_type="ephemeral", replace_original=False)
