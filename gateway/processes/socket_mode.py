"""`threadline web --socket`: the same Bolt app over Socket Mode instead of HTTP.

Slack opens no connection to us: the app dials out (apps.connections.open with the
app-level token, then a WebSocket) and acknowledges each envelope on it. Bolt's built-in
handler (slack_sdk's own WebSocket client, no extra dependency) runs the listeners before it
acknowledges, as the HTTP app does, so an acknowledged event is already in Redis.

It has no HTTP server: with METRICS_PORT set it serves what web's `/metrics` would (its own
metrics, kept in memory as it is one process, and the queues) there, from a thread, and
`threadline_socket_mode_connected`: whether its WebSocket is open now. slack_sdk reconnects by
itself, so a 0 that lasts means Slack's events are not reaching this process.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk.socket_mode.builtin import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest

from gateway.app import build_app
from gateway.authz import warn_if_nobody_approves
from gateway.processes.logs import configure_logging
from gateway.processes.metrics_port import serve_metrics
from gateway.slack_identity import SlackIdentity
from jobs import metrics
from jobs.metrics_export import scrape_registry
from jobs.redis_connect import RedisTarget, connect
from jobs.settings import Settings

SOCKET_CONCURRENCY = 16  # envelopes handled at once; each waits on Redis, not the CPU


# Envelope types, named as web names the HTTP requests they stand for (jobs.metrics).
ENVELOPE_KINDS = {"events_api": "event", "slash_commands": "command", "interactive": "interaction"}


def serve_socket(settings: Settings) -> None:
    configure_logging(settings)
    redis = connect(RedisTarget.of(settings))
    if settings.METRICS_PORT is not None:
        serve_metrics(settings.METRICS_PORT, scrape_registry(redis))
    warn_if_nobody_approves(settings)
    identity = SlackIdentity(settings)
    identity.check_at_start()  # SettingsError (one line) when Slack refuses the bot token
    app = build_app(settings, redis, identity)
    handler = _TimedHandler(app, settings.SLACK_APP_TOKEN, concurrency=SOCKET_CONCURRENCY)
    REGISTRY.register(_Connected(handler.client))
    handler.start()  # type: ignore[no-untyped-call]  # slack_bolt leaves SocketModeHandler.start unannotated


class _TimedHandler(SocketModeHandler):
    """Bolt's handler, timing each envelope from the moment it is handled to its acknowledgement,
    by kind, as web times Slack's HTTP requests (`threadline_slack_request_seconds`). Its client
    is the built-in one, as slack_bolt's own signature says (narrowing its base class's)."""

    def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        started = time.perf_counter()
        try:
            super().handle(client, req)
        finally:
            kind = ENVELOPE_KINDS.get(req.type, "other")
            metrics.REQUEST_SECONDS.labels(kind).observe(time.perf_counter() - started)


class _Connected(Collector):
    """`threadline_socket_mode_connected`, read from the client at each scrape."""

    def __init__(self, client: SocketModeClient) -> None:
        self.client = client

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "threadline_socket_mode_connected",
            "1 while the Socket Mode WebSocket to Slack is open, else 0",
            value=1.0 if self.client.is_connected() else 0.0,
        )
