"""The few errors a model provider raises; callers branch on the class, never on text.

Their messages reach the thread, the wire log and the worker's log, so they never carry the
provider's body (which may quote the API key or the request): only the HTTP status and the
error code/type the provider gives (`agent.redaction.http_error_summary`).
"""

from __future__ import annotations

from typing import Literal

from agent.redaction import error_codes, http_error_summary


class ModelError(Exception):
    """The model call failed in a way the caller should report, not retry."""


class ModelHTTPError(ModelError):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"model endpoint answered {http_error_summary(status, body)}")
        self.status = status
        self.codes = error_codes(body)  # the body itself is not kept: nothing can echo it


RetryCause = Literal["rate_limited", "server_error", "unreachable", "stream_error", "stream_cut"]


class RetryableModelError(ModelError):
    """429, 5xx, timeouts and dropped connections: worth another attempt after `retry_after`.
    `cause` says which, in a word an operator can count retries by."""

    def __init__(
        self, message: str, retry_after: float | None = None, cause: RetryCause = "unreachable"
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.cause = cause


class QuotaExhaustedError(ModelError):
    """The account's quota or credit is used up (OpenAI's and Kimi's 429 that says so, 402):
    waiting does not help, so it is not retried."""


class ContextOverflowError(ModelError):
    """The request did not fit the model's context window."""


class StructureRejectedError(ModelError):
    """The provider rejected the message structure (unpaired tool calls and the like)."""


class EmptyResponseError(ModelError):
    """The model answered with nothing usable."""


class TruncatedResponseError(ModelError):
    """The answer was cut off by the output limit before it was complete."""


class MalformedResponseError(ModelError):
    """The endpoint answered 200 with a body that is not a chat completion."""
