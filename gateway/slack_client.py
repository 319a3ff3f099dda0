"""The Slack Web API client, pointed at SLACK_API_URL (tests and the sandbox use a local fake).

Its errors are summarised where they are raised: a `SlackApiError` normally carries Slack's
whole answer in its message and its response (`response_metadata` messages quote what was
sent; a proxy's error page is echoed whole), and those reach logs, RQ's stored tracebacks and
doctor's output. Here the message is "Slack chat.postMessage failed: HTTP 500 (fatal_error)" and
the response keeps only `ok`, Slack's error code, the status and the headers (Retry-After).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler
from slack_sdk.http_retry.handler import RetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web import SlackResponse

from agent.redaction import error_codes, http_error_summary, redact_text
from jobs import metrics
from jobs.settings import Settings

RATE_LIMIT_RETRIES = 5  # honours Retry-After each time; a 429 storm longer than this fails the job
CONNECTION_RETRIES = 2
UNEXPECTED = "unexpected_response"  # the error code when Slack's answer gave none we can show


class SlackCallError(SlackApiError):
    """A Web API call failed; the message and the response say how, never with Slack's body."""

    def __init__(self, method: str, response: SlackResponse) -> None:
        Exception.__init__(
            self, f"Slack {method} failed: {http_error_summary(response.status_code, response.data)}"
        )
        self.response = response


class SummarisingWebClient(WebClient):
    def api_call(  # slack_sdk's signature, kept as is
        self,
        api_method: str,
        *,
        http_verb: str = "POST",
        files: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        json: dict[str, Any] | None = None,
        headers: dict[str, Any] | None = None,
        auth: dict[str, Any] | None = None,
    ) -> SlackResponse:
        try:
            answered = super().api_call(
                api_method, http_verb=http_verb, files=files, data=data, params=params, json=json,
                headers=headers, auth=auth,
            )  # fmt: skip
        except SlackApiError as error:
            failed = error.response
        except Exception:
            metrics.slack_called(api_method, "request_failed")  # no answer: connection, timeout
            raise
        else:
            metrics.slack_called(api_method, None)
            return answered
        summary = _summarised(failed)
        metrics.slack_called(api_method, str(summary.get("error")))
        # Raised outside the handler, so Slack's original error is not even its __context__.
        raise SlackCallError(api_method, summary)


class CountedRateLimitHandler(RateLimitErrorRetryHandler):
    """slack_sdk's 429 handler (it sleeps for Retry-After), counting the 429s and the wait."""

    def prepare_for_next_attempt(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        started = time.monotonic()
        try:
            super().prepare_for_next_attempt(state=state, request=request, response=response, error=error)
        finally:
            method = request.url.rstrip("/").rsplit("/", 1)[-1]
            metrics.slack_rate_limited(method, time.monotonic() - started)


def web_client(
    settings: Settings, *, retry_handlers: list[RetryHandler] | None = None, timeout: int | None = None
) -> WebClient:
    handlers = retry_handlers
    if handlers is None:
        handlers = [
            ConnectionErrorRetryHandler(max_retry_count=CONNECTION_RETRIES),
            CountedRateLimitHandler(max_retry_count=RATE_LIMIT_RETRIES),
        ]
    return SummarisingWebClient(
        token=settings.SLACK_BOT_TOKEN,
        base_url=settings.SLACK_API_URL,
        timeout=settings.SLACK_TIMEOUT_SECONDS if timeout is None else timeout,
        retry_handlers=handlers,
        logger=_SDK_LOG,
    )


def _summarised(response: SlackResponse) -> SlackResponse:
    """The response reduced to what callers branch on: Slack's error code, status, headers."""
    codes = error_codes(response.data) if isinstance(response.data, dict) else []
    response.data = response._initial_data = {"ok": False, "error": codes[0] if codes else UNEXPECTED}
    return response


class _NoBodies(logging.Filter):
    """slack_sdk logs an answer it cannot parse ("Failed to decode Slack API response: <body>")
    and, at DEBUG, every request's arguments and every answer's body: what people wrote and what
    the agent answered. Keep what happened, drop the bodies, and redact any URL in the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith("Failed to decode Slack API response"):
            message = "Failed to decode Slack API response (not JSON; the body is not shown)"
        for start, cut in _BODY_CUTS:
            if message.startswith(start) and cut in message:
                message = message[: message.index(cut)] + " (the rest is not shown)"
        record.msg, record.args = redact_text(message), None
        return True


# slack_sdk's DEBUG lines and where what they say stops being safe to log (base_client.py).
_BODY_CUTS = (("Sending a request", ", query_params:"), ("Received the following response", ", body:"))


_SDK_LOG = logging.getLogger("gateway.slack_client.sdk")
_SDK_LOG.addFilter(_NoBodies())
