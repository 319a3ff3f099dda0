"""`threadline web --socket`: the same Bolt app over Socket Mode instead of HTTP.

Slack opens no connection to us: the app dials out (apps.connections.open with the
app-level token, then a WebSocket) and acknowledges each envelope on it. Bolt's built-in
handler (slack_sdk's own WebSocket client, no extra dependency) runs the listeners before it
acknowledges, as the HTTP app does, so an acknowledged event is already in Redis.
"""

from __future__ import annotations

from slack_bolt.adapter.socket_mode import SocketModeHandler

from gateway.app import build_app
from gateway.authz import warn_if_nobody_approves
from gateway.processes.logs import configure_logging
from gateway.slack_identity import SlackIdentity
from jobs.runtime import redis_from_url
from jobs.settings import Settings

SOCKET_CONCURRENCY = 16  # envelopes handled at once; each waits on Redis, not the CPU


def serve_socket(settings: Settings) -> None:
    configure_logging(settings)
    warn_if_nobody_approves(settings)
    identity = SlackIdentity(settings)
    identity.check_at_start()  # SettingsError (one line) when Slack refuses the bot token
    app = build_app(settings, redis_from_url(settings.REDIS_URL or ""), identity)
    handler = SocketModeHandler(app, settings.SLACK_APP_TOKEN, concurrency=SOCKET_CONCURRENCY)
    handler.start()  # type: ignore[no-untyped-call]  # slack_bolt leaves SocketModeHandler.start unannotated
