"""The compaction service (context-core.md §3.5, in this project's shape): plan, summarise, apply.

The caller (the loop, or `/agent compact` on the Redis side) drives three pure-ish steps:

1. `prepare_compaction(history, source, max_size)` picks n with `compute_compact_count` and
   snapshots the history it was computed from.
2. `await summarise(plan, model)` asks the model for a handoff note about `history[:n]`,
   shrinking the request on overflow and retrying truncated, empty and transient failures.
3. After re-reading the history, `apply_compaction(current, plan.history, result)` returns the
   new history (`[summary] + current[n:]`) and the record to append, or `StaleCompaction` when
   the history changed in a way the summary did not see.

Every failure of step 2 is a `CompactionFailedError` whose `__cause__` is the model error,
except authentication errors, which pass through unchanged for the caller to report as such.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent.compaction.prompt import Projector, compaction_instruction, summary_request
from agent.compaction.rules import (
    DEFAULT_COMPACTION_CONFIG,
    CompactionConfig,
    CompactionSource,
    Estimator,
    compute_compact_count,
)
from agent.compaction.shape import (
    compacted_history,
    context_summary_text,
    tokens_after_compaction,
    unsafe_reason,
)
from agent.compaction.shrink import (
    OVERFLOW_SHRINK_RATIOS,
    drop_oldest_message,
    shrink_history_after_overflow,
)
from agent.messages import Message
from agent.model.base import ChatModel, ModelRequest, ModelResponse
from agent.model.errors import (
    ContextOverflowError,
    EmptyResponseError,
    ModelError,
    ModelHTTPError,
    RetryableModelError,
    TruncatedResponseError,
)
from agent.projection.projector import project
from agent.tokens import answer_usage, estimate_message, estimate_text
from agent.wire import ApplyCompaction

# Drop-oldest retries after a truncated or empty summary: each costs a full request.
MAX_COMPACTION_RETRY_ATTEMPTS = 5
# One shrink per ratio (0.7, 0.5, 0.35); the overflow after the last one is final.
MAX_OVERFLOW_SHRINKS = len(OVERFLOW_SHRINK_RATIOS)
# Requests per history size for 429 / 5xx / timeouts, with exponential back-off between them.
MAX_TRANSIENT_ATTEMPTS = 5
RETRY_BASE_DELAY_S = 1.0
RETRY_MAX_DELAY_S = 30.0
TRUNCATED_FINISH_REASONS = frozenset({"length", "truncated", "max_tokens"})
# An empty answer the provider filtered will come back empty again: do not retry it.
FILTERED_FINISH_REASONS = frozenset({"content_filter", "filtered"})
AUTH_STATUSES = frozenset({401, 403})

NO_MESSAGES = "No messages to compact in current history."
NO_SPLIT = (
    "Nothing to compact yet: no point in the history can end a summary without splitting a tool exchange."
)
TRUNCATED_SUMMARY = "Compaction response was truncated before producing a complete summary."

Sleep = Callable[[float], Awaitable[None]]


class CompactionUnavailableError(Exception):
    """Nothing can be compacted (`compaction.unable`)."""


class CompactionFailedError(Exception):
    """The summary could not be produced (`compaction.failed`); `__cause__` is the model error."""


@dataclass(frozen=True)
class CompactionPlan:
    """What to compact: `history[:compacted_count]`, computed from exactly this `history`."""

    source: CompactionSource
    history: tuple[Message, ...]
    compacted_count: int
    max_size: int
    tokens_before: int
    request_overhead_tokens: int = 0
    instruction: str | None = None

    @property
    def to_compact(self) -> list[Message]:
        return list(self.history[: self.compacted_count])

    @property
    def kept(self) -> list[Message]:
        return list(self.history[self.compacted_count :])


class CompactionResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    summary: str
    context_summary: str
    compacted_count: int
    kept_count: int
    tokens_before: int
    tokens_after: int
    dropped_count: int
    source: CompactionSource
    summary_output_tokens: int | None = None
    usage: dict[str, Any] | None = None  # what the summary request cost (agent.tokens.answer_usage)

    def record(self, *, wire_start: str | None = None, wire_end: str | None = None) -> ApplyCompaction:
        """The `context.apply_compaction` record; `wire_start`/`wire_end` are the stream ids covered."""
        return ApplyCompaction(
            summary=self.summary,
            context_summary=self.context_summary,
            compacted_count=self.compacted_count,
            kept_count=self.kept_count,
            source=self.source,
            tokens_before=self.tokens_before,
            tokens_after=self.tokens_after,
            dropped_count=self.dropped_count or None,
            wire_start=wire_start,
            wire_end=wire_end,
            usage=self.usage,
        )


@dataclass(frozen=True)
class AppliedCompaction:
    history: list[Message]
    result: CompactionResult  # kept_count and tokens_after count what was appended meanwhile


@dataclass(frozen=True)
class StaleCompaction:
    reason: str


def prepare_compaction(
    history: Sequence[Message],
    source: CompactionSource,
    max_size: int,
    config: CompactionConfig = DEFAULT_COMPACTION_CONFIG,
    *,
    instruction: str | None = None,
    request_overhead_tokens: int = 0,
    tokens_before: int | None = None,
    estimate: Estimator = estimate_message,
) -> CompactionPlan:
    """Choose n for this history. `tokens_before` defaults to the estimate plus the overhead."""
    if not history:
        raise CompactionUnavailableError(NO_MESSAGES)
    count = compute_compact_count(history, source, max_size, config, estimate)
    if count <= 0:
        raise CompactionUnavailableError(NO_SPLIT)
    if tokens_before is None:
        tokens_before = request_overhead_tokens + sum(estimate(message) for message in history)
    return CompactionPlan(
        source=source,
        history=tuple(history),
        compacted_count=count,
        max_size=max_size,
        tokens_before=tokens_before,
        request_overhead_tokens=request_overhead_tokens,
        instruction=instruction,
    )


@dataclass
class _Attempts:
    """The request history being summarised and the failure counters of context-core.md §3.5."""

    messages: list[Message]
    dropped: int = 0
    overflows: int = 0
    retries: int = 0
    transient: int = 0
    requests: list[int] = field(default_factory=list)

    def replace(self, messages: list[Message]) -> None:
        self.dropped += len(self.messages) - len(messages)
        self.messages = messages
        self.transient = 0


async def summarise(
    plan: CompactionPlan,
    model: ChatModel,
    *,
    project: Projector | None = None,
    system: str | None = None,
    max_output_tokens: int | None = None,
    sleep: Sleep = asyncio.sleep,
    estimate: Estimator = estimate_message,
    on_overflow: Callable[[int], None] | None = None,
) -> CompactionResult:
    """Ask `model` for the summary of `plan.to_compact`; see the module docstring for failures.

    `on_overflow` receives the estimated size of each request that overflowed, so the caller can
    remember the observed window (`observed_window`).
    """
    attempts = _Attempts(plan.to_compact)
    instruction = compaction_instruction(plan.instruction)
    projector = project or _default_projector()
    while True:
        request = summary_request(
            attempts.messages,
            project=projector,
            instruction=instruction,
            max_size=plan.max_size,
            system=system,
            max_output_tokens=max_output_tokens,
        )
        try:
            response = await model.complete(request)
            summary = _summary_text(response)
        except ModelError as error:
            await _recover(error, attempts, request, sleep, estimate, on_overflow)
            continue
        return _result(plan, summary, response, attempts.dropped, estimate).model_copy(
            update={"usage": answer_usage(response, request)}
        )


async def _recover(
    error: ModelError,
    attempts: _Attempts,
    request: ModelRequest,
    sleep: Sleep,
    estimate: Estimator,
    on_overflow: Callable[[int], None] | None,
) -> None:
    """Prepare the next attempt after `error`, or raise when the spec says to give up."""
    if isinstance(error, ModelHTTPError) and error.status in AUTH_STATUSES:
        raise error
    if isinstance(error, RetryableModelError):
        attempts.transient += 1
        _give_up_if(attempts.transient >= MAX_TRANSIENT_ATTEMPTS, error)
        await sleep(_backoff(attempts.transient, error.retry_after))
        return
    if isinstance(error, ContextOverflowError):
        if on_overflow is not None:
            on_overflow(_request_tokens(request, estimate))
        attempts.overflows += 1
        _give_up_if(attempts.overflows > MAX_OVERFLOW_SHRINKS or len(attempts.messages) <= 1, error)
        _shrink(
            attempts, shrink_history_after_overflow(attempts.messages, attempts.overflows, estimate), error
        )
        return
    if isinstance(error, TruncatedResponseError | EmptyResponseError) and not _filtered(error):
        attempts.retries += 1
        _give_up_if(attempts.retries > MAX_COMPACTION_RETRY_ATTEMPTS or len(attempts.messages) <= 1, error)
        _shrink(attempts, drop_oldest_message(attempts.messages), error)
        return
    raise CompactionFailedError(str(error)) from error


def _shrink(attempts: _Attempts, messages: list[Message], error: ModelError) -> None:
    # Only tool results were left after the cut: there is nothing to summarise any more.
    _give_up_if(not messages, error)
    attempts.replace(messages)


def _give_up_if(condition: bool, error: ModelError) -> None:
    if condition:
        raise CompactionFailedError(str(error)) from error


def _summary_text(response: ModelResponse) -> str:
    reason = response.finish_reason
    if reason in TRUNCATED_FINISH_REASONS:
        raise TruncatedResponseError(TRUNCATED_SUMMARY)
    summary = response.message.text().strip()
    if not summary:
        raise _EmptySummaryError(f"the model returned an empty summary (finish reason {reason})", reason)
    return summary


class _EmptySummaryError(EmptyResponseError):
    def __init__(self, message: str, finish_reason: str | None) -> None:
        super().__init__(message)
        self.finish_reason = finish_reason


def _filtered(error: ModelError) -> bool:
    return getattr(error, "finish_reason", None) in FILTERED_FINISH_REASONS


def _backoff(attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return retry_after
    return min(RETRY_BASE_DELAY_S * 2.0 ** (attempt - 1), RETRY_MAX_DELAY_S)


def _request_tokens(request: ModelRequest, estimate: Estimator) -> int:
    return estimate_text(request.system or "") + sum(estimate(message) for message in request.messages)


def _result(
    plan: CompactionPlan, summary: str, response: ModelResponse, dropped: int, estimate: Estimator
) -> CompactionResult:
    context_summary = context_summary_text(summary)
    # A provider that does not count reports 0; fall back to the estimate then.
    output_tokens = response.usage.output_tokens if response.usage and response.usage.output_tokens else None
    kept = plan.kept
    return CompactionResult(
        summary=summary,
        context_summary=context_summary,
        compacted_count=plan.compacted_count,
        kept_count=len(kept),
        tokens_before=plan.tokens_before,
        tokens_after=tokens_after_compaction(
            context_summary, kept, plan.request_overhead_tokens, output_tokens, estimate
        ),
        dropped_count=dropped,
        source=plan.source,
        summary_output_tokens=output_tokens,
    )


def apply_compaction(
    current: Sequence[Message],
    original: Sequence[Message],
    result: CompactionResult,
    estimate: Estimator = estimate_message,
) -> AppliedCompaction | StaleCompaction:
    """`[summary] + current[n:]`, if the summary of `original` still describes current's prefix."""
    reason = unsafe_reason(current, original)
    if reason is not None:
        return StaleCompaction(reason)
    appended = current[len(original) :]
    adjusted = result.model_copy(
        update={
            "kept_count": len(current) - result.compacted_count,
            "tokens_after": result.tokens_after + sum(estimate(message) for message in appended),
        }
    )
    history = compacted_history(current, result.compacted_count, result.context_summary)
    return AppliedCompaction(history=history, result=adjusted)


def _default_projector() -> Projector:
    return project
