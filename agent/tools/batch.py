"""Between the streamed model output and the executor: one dispatch per step (project addition).

The adapter is built from the call ids the step will produce. Each arriving call gets a
waiter; when the last expected call has arrived, the whole batch goes to the executor
once; results are routed to waiters by `tool_call_id`. A call the executor never answered
resolves with the "produced no result ... outcome is unknown" text. A cancel before dispatch
resolves every waiter with the aborted text and the executor is never called.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Protocol

from agent.messages import ToolCall
from agent.tools import texts
from agent.tools.base import ToolCallResult, ToolResult, error_result
from agent.tools.cancel import CancelSignal

log = logging.getLogger(__name__)


class BatchExecutor(Protocol):
    def execute(
        self, calls: Sequence[ToolCall], signal: CancelSignal | None = None
    ) -> AsyncIterator[ToolCallResult]: ...


class BatchAdapter:
    def __init__(
        self, expected_ids: Iterable[str], executor: BatchExecutor, signal: CancelSignal | None = None
    ) -> None:
        self._expected = list(expected_ids)
        self._expected_set = frozenset(self._expected)
        if len(self._expected_set) != len(self._expected):
            raise ValueError("the expected tool call ids of a batch must be distinct")
        self._executor = executor
        self._signal = signal or CancelSignal()
        self._calls: dict[str, ToolCall] = {}
        self._waiters: dict[str, asyncio.Future[ToolResult]] = {}
        self._completed: asyncio.Queue[ToolCallResult] = asyncio.Queue()
        self._run: asyncio.Task[None] | None = None
        self._remove_callback = self._signal.add_callback(self._on_cancel)

    @property
    def dispatched(self) -> bool:
        return self._run is not None

    @property
    def signal(self) -> CancelSignal:
        return self._signal

    def add(self, call: ToolCall) -> asyncio.Future[ToolResult]:
        """Register an arriving call; returns its waiter. The last expected call dispatches."""
        if call.id not in self._expected_set:
            raise ValueError(f"tool call {call.id!r} is not part of this batch")
        if call.id in self._calls:
            raise ValueError(f"tool call {call.id!r} arrived twice")
        self._calls[call.id] = call
        waiter = self._waiter_for(call.id)
        if self._signal.cancelled:
            self._resolve(call.id, error_result(self._signal.aborted_text(call.name)))
        elif len(self._calls) == len(self._expected):
            self._dispatch()
        return waiter

    def waiter(self, tool_call_id: str) -> asyncio.Future[ToolResult]:
        """The waiter of an expected call (it may not have arrived yet)."""
        if tool_call_id not in self._expected_set:
            raise KeyError(tool_call_id)
        return self._waiter_for(tool_call_id)

    def cancel(self, reason: texts.CancelReason = "aborted") -> None:
        """Before dispatch every waiter resolves as aborted; after it, the executor answers."""
        self._signal.cancel(reason)

    async def completed(self) -> AsyncIterator[ToolCallResult]:
        """Every expected call's result as it resolves (completion order)."""
        for _ in self._expected:
            yield await self._completed.get()

    async def results(self) -> list[ToolResult]:
        """All results in the expected (call) order, once every call has arrived and resolved."""
        return [await self._waiter_for(call_id) for call_id in self._expected]

    # --- internals -----------------------------------------------------------------------

    def _dispatch(self) -> None:
        calls = [self._calls[call_id] for call_id in self._expected]
        try:
            stream = self._executor.execute(calls, self._signal)
        except Exception:
            log.exception("tool executor refused the batch; every call gets the unknown-outcome text")
            stream = _nothing()
        self._run = asyncio.ensure_future(self._route(stream, calls))

    async def _route(self, stream: AsyncIterator[ToolCallResult], calls: list[ToolCall]) -> None:
        try:
            async for tool_call_id, _name, result in stream:
                if tool_call_id in self._calls:
                    self._resolve(tool_call_id, result)
                else:
                    log.warning("executor returned a result for unknown call %r", tool_call_id)
        except Exception:
            log.exception("tool executor failed; unanswered calls get the unknown-outcome text")
        finally:
            self._remove_callback()
            closing = getattr(stream, "aclose", None)
            if closing is not None:
                with contextlib.suppress(Exception):
                    await closing()
            for call in calls:
                self._resolve(call.id, error_result(texts.produced_no_result(call.name)))

    def _waiter_for(self, call_id: str) -> asyncio.Future[ToolResult]:
        waiter = self._waiters.get(call_id)
        if waiter is None:
            waiter = self._waiters[call_id] = asyncio.get_running_loop().create_future()
        return waiter

    def _resolve(self, call_id: str, result: ToolResult) -> None:
        waiter = self._waiter_for(call_id)
        if waiter.done():
            return
        waiter.set_result(result)
        self._completed.put_nowait(ToolCallResult(call_id, self._calls[call_id].name, result))

    def _on_cancel(self, reason: texts.CancelReason) -> None:
        if self.dispatched:
            return  # the executor has the signal and answers every call itself
        for call_id, call in list(self._calls.items()):
            self._resolve(call_id, error_result(self._signal.aborted_text(call.name)))


async def _nothing() -> AsyncIterator[ToolCallResult]:
    return
    yield  # an async generator that yields nothing
