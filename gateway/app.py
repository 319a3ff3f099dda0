"""The Bolt app: signature checks, url_verification and self-event filtering come from Bolt."""

from __future__ import annotations

import logging
from typing import Any

from redis.exceptions import RedisError
from slack_bolt import App, BoltResponse

from gateway.listeners import mentions
from gateway.slack_client import web_client
from jobs.settings import Settings

log = logging.getLogger(__name__)


def build_app(settings: Settings, redis: Any) -> App:
    app = App(
        signing_secret=settings.SLACK_SIGNING_SECRET,
        client=web_client(settings),
        # Listeners only write to Redis (milliseconds), so they finish before Slack gets its
        # 200: an input Slack saw acknowledged is already durable.
        process_before_response=True,
        token_verification_enabled=False,
    )
    mentions.register(app, settings, redis)
    app.error(_answer_errors)
    return app


def _answer_errors(error: Exception, body: dict[str, Any], response: BoltResponse) -> None:
    if isinstance(error, RedisError):
        # Not acknowledged, so Slack retries the event: nothing is lost while Redis is away.
        log.error(
            "Redis is unavailable (%s): event %s not recorded; answering 503 so Slack retries",
            error,
            body.get("event_id"),
        )
        response.status = 503
        return
    log.exception("listener failed for event %s", body.get("event_id"), exc_info=error)
