"""Every model-visible text of the tool layer, exactly as the spec words it (sections 4.2-4.5)."""

from __future__ import annotations

from typing import Literal

# "worker_restarted": the worker was asked to stop (a deploy) and the tool outlived its grace.
CancelReason = Literal["user_cancelled", "aborted", "worker_restarted"]

TOOL_OUTPUT_EMPTY = "Tool output is empty."
NON_TEXT_CONTENT = "Tool returned non-text content."
SKIPPED_AFTER_STOP = "Tool skipped because a previous tool call stopped the turn."
VALIDATION_FAILED = "Tool parameter validation failed"


def not_found(name: str) -> str:
    return f'Tool "{name}" not found'


def invalid_args(name: str, errors: str) -> str:
    return f'Invalid args for tool "{name}": {errors}'


def resolve_failed(name: str, message: str) -> str:
    return f'Tool "{name}" failed to resolve execution: {message}'


def aborted(name: str, reason: CancelReason = "aborted", after_s: float | None = None) -> str:
    if reason == "worker_restarted":
        after = f" after {after_s:g} s" if after_s is not None else ""
        return (
            f'Tool "{name}" was stopped{after} because the worker restarted; it may have partly run. '
            "Check what it changed before running it again."
        )
    if reason == "user_cancelled":
        return (
            f'The user manually interrupted "{name}" (and anything else running at the same time). '
            "This was a deliberate user action, not a system error, timeout, or capacity limit. "
            "Do not retry automatically or guess at the cause — wait for the user's next instruction."
        )
    return f'Tool "{name}" was aborted'


def _with_reason(text: str, reason: str | None) -> str:
    return f"{text} Reason: {reason}" if reason else text


def denied_by_policy(name: str) -> str:
    return f'Tool "{name}" was denied by permission policy.'


def denied_by_rule(name: str, reason: str | None = None) -> str:
    return _with_reason(f'Tool "{name}" was denied by permission rule.', reason)


def approval_rejected(name: str, feedback: str | None = None) -> str:
    return _with_reason(
        f'Tool "{name}" was not run because the user rejected the approval request.', feedback
    )


def approval_expired(name: str, after: str) -> str:
    return f'Tool "{name}" was not run because nobody approved the request within {after}.'


def approval_cancelled(name: str) -> str:
    return f'Tool "{name}" was not run because the approval request was cancelled.'


def failed(name: str, message: str) -> str:
    return f'Tool "{name}" failed: {message}'


def returned_nothing(name: str) -> str:
    return f'Tool "{name}" returned no result.'


def returned_wrong_type(name: str, type_name: str) -> str:
    return f'Tool "{name}" returned a {type_name} instead of a tool result.'


def malformed_output(name: str) -> str:
    return f'Tool "{name}" returned a result with a missing or malformed "output" field.'


def produced_no_result(name: str) -> str:
    """The batch adapter's text for a call the executor never answered."""
    return f'Tool "{name}" produced no result. Its outcome is unknown: do not assume it ran or did not run.'


def invalid_json_note(error: str) -> str:
    """Told beside the schema errors when the raw arguments were not JSON at all."""
    return (
        f"The arguments were not valid JSON ({error}), so they were read as {{}} and the tool was "
        "not run. Send the arguments again as one JSON object."
    )


INVALID_JSON = "the arguments are not valid JSON"
