"""The Slack Web API client, pointed at SLACK_API_URL (tests and the sandbox use a local fake)."""

from __future__ import annotations

from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler
from slack_sdk.http_retry.handler import RetryHandler

from jobs.settings import Settings

RATE_LIMIT_RETRIES = 5  # honours Retry-After each time; a 429 storm longer than this fails the job
CONNECTION_RETRIES = 2


def web_client(settings: Settings, *, retry_handlers: list[RetryHandler] | None = None) -> WebClient:
    handlers = retry_handlers
    if handlers is None:
        handlers = [
            ConnectionErrorRetryHandler(max_retry_count=CONNECTION_RETRIES),
            RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
        ]
    return WebClient(
        token=settings.SLACK_BOT_TOKEN,
        base_url=settings.SLACK_API_URL,
        timeout=settings.SLACK_TIMEOUT_SECONDS,
        retry_handlers=handlers,
    )
