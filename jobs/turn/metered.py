"""The agent core observed from outside: the model's requests and the turn's tool calls, counted
in jobs.metrics through the core's own seams (a ChatModel wrapper, the TurnReporter)."""

from __future__ import annotations

import time
from collections.abc import Collection

from agent.loop.ports import ToolCallsStarted, ToolFinished, TurnEvent, TurnReporter
from agent.messages import ToolCall
from agent.model.base import ChatModel, ModelRequest, ModelResponse, StreamListener, Usage
from agent.model.errors import MalformedResponseError, ModelError, RetryableModelError
from jobs import metrics


class MeteredModel:
    """One model request per `complete` (RetryingModel wraps this, so each attempt is timed)."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.name = inner.name

    async def complete(self, request: ModelRequest, listener: StreamListener | None = None) -> ModelResponse:
        first = _FirstToken(listener)
        try:
            response = await self.inner.complete(request, first)
        except BaseException as error:
            metrics.MODEL_SECONDS.labels(_failure(error)).observe(first.elapsed())
            raise
        metrics.MODEL_SECONDS.labels("ok").observe(first.elapsed())
        if first.first_s is not None:
            metrics.MODEL_FIRST_TOKEN.observe(first.first_s)
        if response.usage is not None:
            _count_tokens(response.usage)
        return response


def _failure(error: BaseException) -> str:
    if isinstance(error, RetryableModelError):
        return error.cause
    if isinstance(error, MalformedResponseError):
        return "malformed"
    if isinstance(error, ModelError):
        return "refused"  # the endpoint said no: overflow, structure, a 4xx
    return "error" if isinstance(error, Exception) else "cancelled"  # CancelledError: a stop or drain


def _count_tokens(usage: Usage) -> None:
    metrics.MODEL_TOKENS.labels("input").inc(usage.input_tokens)
    metrics.MODEL_TOKENS.labels("output").inc(usage.output_tokens)
    if usage.cached_tokens:
        metrics.MODEL_TOKENS.labels("cached").inc(usage.cached_tokens)


class _FirstToken:
    """A StreamListener that notes when the first text or tool call arrived, then passes it on."""

    def __init__(self, inner: StreamListener | None) -> None:
        self.inner = inner
        self.started = time.perf_counter()
        self.first_s: float | None = None

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def _heard(self) -> None:
        if self.first_s is None:
            self.first_s = self.elapsed()

    def on_text(self, delta: str) -> None:
        self._heard()
        if self.inner is not None:
            self.inner.on_text(delta)

    def on_tool_call(self, call: ToolCall) -> None:
        self._heard()
        if self.inner is not None:
            self.inner.on_tool_call(call)

    def on_restart(self) -> None:
        if self.inner is not None:
            self.inner.on_restart()


class MeteredReporter:
    """The turn's reporter, which also counts each tool call's result and its time."""

    def __init__(self, inner: TurnReporter, known_tools: Collection[str]) -> None:
        self.inner = inner
        self.known_tools = frozenset(known_tools)
        self._batch_started: dict[str, float] = {}  # call id → when its batch started

    def report(self, event: TurnEvent) -> None:
        if isinstance(event, ToolCallsStarted):
            now = time.perf_counter()
            self._batch_started.update((call.id, now) for call in event.calls)
        elif isinstance(event, ToolFinished):
            started = self._batch_started.pop(event.call.id, None)
            seconds = None if started is None else time.perf_counter() - started
            metrics.tool_finished(event.call.name, _tool_outcome(event), seconds, self.known_tools)
        self.inner.report(event)


def _tool_outcome(event: ToolFinished) -> str:
    if event.aborted:
        return "aborted"
    return "error" if event.result.is_error else "ok"
