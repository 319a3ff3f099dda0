"""The message shortcut "Stop agent run" (⋯ on any message of the thread)."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import Ack, App, Respond

from gateway import payload
from gateway.deps import Deps
from gateway.listeners._controls import act
from gateway.render.buttons import STOP_SHORTCUT
from gateway.threads import session_key_for

log = logging.getLogger(__name__)


def register(app: App, deps: Deps) -> None:
    @app.shortcut(STOP_SHORTCUT)
    def on_stop(ack: Ack, body: dict[str, Any], respond: Respond) -> None:
        ack()
        message = payload.section(body, "message")
        team = payload.text(payload.section(body, "team"), "id")
        key = session_key_for(team, payload.text(payload.section(body, "channel"), "id"), message)
        user = payload.text(payload.section(body, "user"), "id")
        outcome = act(deps, "cancel", key, user)
        log.info("stop shortcut by %s on %s → %s", user, key, outcome)
        respond(text=outcome, response_type="ephemeral", replace_original=False)
