"""Runs one step's tool calls and yields exactly one result per call, in completion order.

Each call goes through preflight (context-core.md §4.2) in call order; a call that may run is handed to
the `ToolScheduler` with its declared accesses, the rest get their result at once. A call
that declares `stop_batch_after_this` (or a ready result with `stop_turn`) makes every later
call return the skipped text without running.

On cancel (4.5): queued calls are dropped and answered with the aborted text (they never
run); running calls are cancelled (asyncio cancellation reaches the tool, a shell kills its
process group) and resolve with the aborted text once they settle, or after the grace
period, when the tool is abandoned.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from agent.messages import ToolCall
from agent.offload import in_thread
from agent.tools import texts
from agent.tools._scheduler import ToolScheduler
from agent.tools.base import ToolCallResult, ToolResult, error_result
from agent.tools.cancel import CancelSignal
from agent.tools.defaults import ABORT_GRACE_MS
from agent.tools.output import coerce_tool_result, failure_result, normalize_tool_result
from agent.tools.policy import (
    AllowAll,
    Approver,
    CallSource,
    NoGuard,
    PermissionPolicy,
    ToolGuard,
)
from agent.tools.preflight import PreparedCall, preflight_call, settle_permission
from agent.tools.registry import ToolRegistry
from agent.tools.spill import spillable_text, truncate_for_model

log = logging.getLogger(__name__)


class ToolExecutor:
    def __init__(
        self,
        registry: ToolRegistry,
        *,
        workspace: Path,
        guard: ToolGuard | None = None,
        policy: PermissionPolicy | None = None,
        approver: Approver | None = None,
        abort_grace_ms: float = ABORT_GRACE_MS,
        source: CallSource = "model",
    ) -> None:
        self.registry = registry
        self.workspace = workspace
        self.guard = guard or NoGuard()
        self.policy = policy or AllowAll()
        self.approver = approver
        self.abort_grace_ms = abort_grace_ms
        self.source = source

    def execute(
        self, calls: Sequence[ToolCall], signal: CancelSignal | None = None
    ) -> AsyncIterator[ToolCallResult]:
        """Results as `(tool_call_id, tool_name, result)`, one per call, in completion order."""
        return _Batch(self, list(calls), signal or CancelSignal()).results()

    def finalize(self, call: ToolCall, result: ToolResult) -> ToolResult | None:
        """The normalised result when no spill file is needed, else None (see `finalize_async`)."""
        result = normalize_tool_result(result)
        return result if spillable_text(result) is None else None

    async def finalize_async(self, call: ToolCall, result: ToolResult) -> ToolResult:
        result = normalize_tool_result(result)
        return await in_thread(
            truncate_for_model, result, tool_name=call.name, tool_call_id=call.id, workspace=self.workspace
        )


class _Call:
    __slots__ = ("call", "delivered", "prepared", "scheduled", "task", "timer", "tool_settled")

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.prepared: PreparedCall | None = None
        self.scheduled = False
        self.task: asyncio.Future[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.tool_settled = False  # the tool returned or raised; only finishing is left
        self.delivered = False


class _Batch:
    def __init__(self, executor: ToolExecutor, calls: list[ToolCall], signal: CancelSignal) -> None:
        self._executor = executor
        self._signal = signal
        self._calls = [_Call(call) for call in calls]
        self._scheduler = ToolScheduler()
        self._ready: asyncio.Queue[ToolCallResult] = asyncio.Queue()
        self._stopped = False

    async def results(self) -> AsyncIterator[ToolCallResult]:
        if not self._calls:
            return
        remove_callback = self._signal.add_callback(self._on_cancel)
        dispatch = asyncio.ensure_future(self._dispatch())
        try:
            for _ in range(len(self._calls)):
                yield await self._ready.get()
        finally:
            remove_callback()
            self._release(dispatch)

    # --- dispatch ------------------------------------------------------------------------

    async def _dispatch(self) -> None:
        try:
            for state in self._calls:
                await self._prepare(state)
        except Exception as error:  # a bug here must still leave every call with a result
            log.exception("tool batch dispatch failed")
            for state in self._calls:
                if not state.scheduled:
                    self._deliver(state, failure_result(state.call.name, error))

    async def _prepare(self, state: _Call) -> None:
        if self._stopped:
            self._deliver(state, error_result(texts.SKIPPED_AFTER_STOP))
            return
        executor = self._executor
        outcome = preflight_call(
            state.call,
            registry=executor.registry,
            workspace=executor.workspace,
            signal=self._signal,
            guard=executor.guard,
            policy=executor.policy,
            source=executor.source,
        )
        if isinstance(outcome, ToolResult):
            self._stopped = self._stopped or outcome.stop_turn
            await self._finish(state, outcome)
            return
        refusal = await settle_permission(outcome, executor.approver, self._signal)
        if refusal is not None:
            await self._finish(state, refusal)
            return
        state.prepared = outcome
        state.scheduled = True
        self._stopped = self._stopped or outcome.execution.stop_batch_after_this
        self._scheduler.add(outcome.execution.accesses, lambda: self._start(state))

    def _start(self, state: _Call) -> asyncio.Future[None]:
        state.task = asyncio.ensure_future(self._run(state))
        return state.task

    async def _run(self, state: _Call) -> None:
        name = state.call.name
        if self._signal.cancelled:  # checked again at task start: a queued call never runs
            self._deliver(state, self._aborted(name))
            return
        assert state.prepared is not None
        try:
            value = await state.prepared.execution.run()
        except asyncio.CancelledError:
            if not self._signal.cancelled:
                raise
            value = None
        except Exception as error:
            value = failure_result(name, error)
        state.tool_settled = True
        if self._signal.cancelled:
            self._deliver(state, self._aborted(name))
            return
        try:
            await self._finish(state, coerce_tool_result(name, value))
        except Exception as error:  # finishing must not lose the call's only result
            log.exception("finishing the result of %s (%s) failed", name, state.call.id)
            self._deliver(state, failure_result(name, error))

    # --- results -------------------------------------------------------------------------

    async def _finish(self, state: _Call, result: ToolResult) -> None:
        if state.delivered:
            return
        final = self._executor.finalize(state.call, result)
        if final is None:
            final = await self._executor.finalize_async(state.call, result)
        self._deliver(state, final)

    def _deliver(self, state: _Call, result: ToolResult) -> None:
        if state.delivered:
            return
        state.delivered = True
        if state.timer is not None:
            state.timer.cancel()
        self._ready.put_nowait(ToolCallResult(state.call.id, state.call.name, result))

    def _aborted(self, name: str) -> ToolResult:
        return error_result(self._signal.aborted_text(name))

    # --- cancellation --------------------------------------------------------------------

    def _on_cancel(self, reason: texts.CancelReason) -> None:
        self._scheduler.clear_queue()
        loop = asyncio.get_running_loop()
        grace = self._executor.abort_grace_ms / 1000
        for state in self._calls:
            if state.delivered or not state.scheduled:
                continue  # not scheduled yet: preflight answers with the aborted text
            if state.task is None:  # was queued: it never runs
                self._deliver(state, self._aborted(state.call.name))
                continue
            if not state.task.done() and not state.tool_settled:
                state.task.cancel()
                state.timer = loop.call_later(grace, self._abandon, state)

    def _abandon(self, state: _Call) -> None:
        if not state.delivered:
            log.warning("abandoning tool %s (%s) after the abort grace", state.call.name, state.call.id)
            self._deliver(state, self._aborted(state.call.name))

    def _release(self, dispatch: asyncio.Future[None]) -> None:
        """The consumer stopped early or all is delivered: nothing of this batch keeps running."""
        if not dispatch.done():
            dispatch.cancel()
        for state in self._calls:
            if state.timer is not None:
                state.timer.cancel()
            if state.task is not None and not state.task.done() and not state.delivered:
                state.task.cancel()
        self._scheduler.clear_queue()
