"""The Bolt app: signature checks, url_verification and self-event filtering come from Bolt."""

from __future__ import annotations

import json
import logging
from typing import Any

from redis import Redis
from redis.exceptions import RedisError
from slack_bolt import App, BoltRequest, BoltResponse
from slack_bolt.error import BoltUnhandledRequestError

from gateway.deps import Deps
from gateway.listeners import actions, agent_session, commands, mentions, messages, shortcuts
from gateway.payload import InvalidPayload
from gateway.slack_client import web_client
from gateway.slack_identity import IdentityUnknown, SlackIdentity
from jobs import log_context, metrics
from jobs.replication import replicas_holding
from jobs.settings import Settings

log = logging.getLogger(__name__)

# What the payload boundary (gateway.payload) raises for a request Slack would never send: the
# sender's error, answered 400. Anything else a listener raises is our bug: logged, answered 500.
BAD_PAYLOAD_ERRORS = (InvalidPayload,)
QUIET_EVENTS = ("assistant_thread_started", "assistant_thread_context_changed")


class _App(App):
    """Bolt's App whose every line about a request names its team and channel, and its thread
    once a listener knows it (`gateway.payload.session_key`); with replicas to wait for, a
    request is acknowledged only once they hold what it wrote."""

    def __init__(self, redis: Redis, replicas: int, ack_timeout_ms: int, **bolt: Any) -> None:
        super().__init__(**bolt)
        self._redis, self._replicas, self._ack_timeout_ms = redis, replicas, ack_timeout_ms

    def dispatch(self, req: BoltRequest) -> BoltResponse:
        with log_context.scope(team=req.context.team_id, channel=req.context.channel_id):
            response = super().dispatch(req)
            if response.status < 300 and self._replicas and not self._replicated(req):
                _answer(response, 503, "Redis has not replicated the input yet; retry later")
            return response

    def _replicated(self, req: BoltRequest) -> bool:
        """Whether enough replicas hold every write so far (the listener's among them)."""
        try:
            held = replicas_holding(self._redis, self._replicas, self._ack_timeout_ms)
        except RedisError as error:
            metrics.redis_error("web")
            log.error("Redis is unavailable (%s) while waiting for replicas; answering 503", error)
            return False
        if held >= self._replicas:
            return True
        metrics.UNREPLICATED_ACKS.inc()
        log.error(
            "%d of %d replicas hold event %s after %d ms: not acknowledged; answering 503 so Slack retries",
            held, self._replicas, req.body.get("event_id") or req.body.get("type"), self._ack_timeout_ms,
        )  # fmt: skip
        return False


def build_app(settings: Settings, redis: Redis, identity: SlackIdentity | None = None) -> App:
    client = web_client(settings)
    app = _App(
        redis,
        settings.replicas_to_ack,
        settings.REDIS_ACK_TIMEOUT_MS,
        signing_secret=settings.SLACK_SIGNING_SECRET,
        client=client,
        # Not Bolt's single-token authorisation: that answers 200 when auth.test fails, and
        # Slack never redelivers the event (gateway/slack_identity.py).
        authorize=identity or SlackIdentity(settings),
        # Listeners only write to Redis (milliseconds), so they finish before Slack gets its
        # 200: an input Slack saw acknowledged is already durable.
        process_before_response=True,
        # A verified request nothing listens for is acknowledged (not 404): Slack counts 404s
        # against the app, and a Socket Mode envelope left unacknowledged is delivered again.
        raise_error_for_unhandled_request=True,
    )
    deps = Deps.build(settings, redis, client)
    for listeners in (mentions, messages, commands, actions, shortcuts, agent_session):
        listeners.register(app, deps)
    for event in QUIET_EVENTS:  # an app set up from an older manifest may still subscribe them
        app.event(event)(lambda: None)
    app.error(_answer_errors)
    return app


NOT_HANDLED = "threadline does not handle that."


def _answer_errors(error: Exception, body: dict[str, Any], response: BoltResponse) -> None:
    if isinstance(error, BoltUnhandledRequestError):
        log.info("nothing handles %s; acknowledged", body.get("type") or body.get("command") or "request")
        interactive = "command" in body or body.get("type") in ("shortcut", "message_action", "block_actions")
        _acknowledge(response, NOT_HANDLED if interactive else None)
        return
    if isinstance(error, RedisError):
        # Not acknowledged, so Slack retries the event: nothing is lost while Redis is away. A
        # mention whose input was recorded before its turn's enqueue failed makes the retry a
        # duplicate; its session is `queued`, and the janitor enqueues the turn (jobs.input).
        metrics.redis_error("web")
        log.error(
            "Redis is unavailable (%s): event %s not acknowledged; answering 503 so Slack retries",
            error,
            body.get("event_id"),
        )
        _answer(response, 503, "Redis is unavailable; retry later")
        return
    if isinstance(error, IdentityUnknown):
        # Not acknowledged, so Slack retries the event once it can say who the bot is.
        level = logging.ERROR if error.invalid_token else logging.WARNING
        log.log(
            level, "%s: event %s not processed; answering 503 so Slack retries", error, body.get("event_id")
        )
        _answer(response, 503, "Slack is unavailable; retry later")
        return
    if isinstance(error, BAD_PAYLOAD_ERRORS):
        log.warning("invalid payload (%s: %s); nothing recorded", type(error).__name__, error)
        _answer(response, 400, f"invalid payload: {error}")
        return
    # Not acknowledged, so Slack retries; the traceback says where our code went wrong.
    log.error("listener failed for event %s", body.get("event_id") or body.get("type"), exc_info=error)
    _answer(response, 500, "internal error; retry later")


def _acknowledge(response: BoltResponse, text: str | None) -> None:
    response.status = 200
    response.body = json.dumps({"text": text, "response_type": "ephemeral"}) if text else ""
    response.headers["content-type"] = ["application/json" if text else "text/plain"]


def _answer(response: BoltResponse, status: int, message: str) -> None:
    response.status = status
    response.body = json.dumps({"ok": False, "error": message})
    response.headers["content-type"] = ["application/json"]
