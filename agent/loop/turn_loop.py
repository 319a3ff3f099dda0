"""The agent loop (context-core.md §5.3): steps of input → compaction check → projection → model → tools.

One `Loop` runs one turn over a `HistoryFold` holding the session's history. Every event goes to
the wire log through the sink as it happens, and the folder applies exactly what was written,
so the in-memory history is always what a reload from Redis would give. The calls of a step
are recorded before any of them runs (intent before effect); each result is recorded as it
completes. Record keys are derived from the turn id and step number, so a job that runs again
never writes the same event twice.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from agent.compaction import CompactionConfig
from agent.fold import HistoryFold
from agent.loop._call_ids import normalize_call_ids, seen_call_ids
from agent.loop._context_keeper import ContextKeeper, ContextTooLargeError
from agent.loop._step_records import call_event, failed_outcome, model_failure_text
from agent.loop._stopping import TurnStopped, TurnStopping
from agent.loop.parking import ApprovalCheck, approver_for
from agent.loop.ports import (
    ENDINGS,
    CallsDeferred,
    DeferredResults,
    NoDeferredResults,
    NullReporter,
    ParkedCall,
    ParkedStep,
    StepStarted,
    StepText,
    ToolCallsStarted,
    ToolFinished,
    TurnEvent,
    TurnOutcome,
    TurnReporter,
    TurnSink,
)
from agent.messages import Message, ToolCall
from agent.model.base import ChatModel, ModelRequest, ModelResponse, StreamListener
from agent.model.errors import ContextOverflowError, ModelError, StructureRejectedError
from agent.offload import over_messages
from agent.projection.incremental import IncrementalProjector
from agent.projection.projector import project_strict
from agent.projection.report import ProjectionReporter, Telemetry
from agent.tokens import answer_usage, estimate_request_overhead
from agent.tools import texts
from agent.tools.base import ToolResult, error_result
from agent.tools.batch import BatchAdapter
from agent.tools.cancel import CancelSignal
from agent.tools.policy import Approver
from agent.tools.texts import CancelReason
from agent.wire import (
    AppendLoopEvent,
    AppendMessage,
    ContentPartEvent,
    StepBegin,
    StepEnd,
    ToolResultEvent,
    ToolResultPayload,
    TurnEnded,
    TurnSteer,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

# A provider's finish reasons for an answer the output limit (max_tokens) cut short.
CUT_FINISH_REASONS = frozenset({"length", "max_tokens"})
CUT_ANSWER_NOTE = "\n\n_(cut off: the model reached its output limit)_"
CUT_CALL_TEXT = (
    "Not run: your message was cut off by the output limit while you wrote this call to {name}, "
    "so its arguments may be incomplete. Send it again, smaller (write a large file in parts)."
)
CUT_TWICE_TEXT = (
    "The model's answer was cut off by its output limit twice in a row, in the middle of tool "
    "calls; none of them ran. Reply in the thread to continue, or raise the model's output limit."
)
MAX_STEPS_TEXT = (
    "Turn exceeded max_steps_per_turn={n}; stopped before another model call. "
    "Reply in the thread to continue."
)
ABANDONED = "abandoned"  # finish reason of a step whose worker died; it settles the step

ExecutorFactory = Callable[[Approver | None], Any]  # → a BatchExecutor (agent.tools.ToolExecutor)


@dataclass(frozen=True)
class LoopConfig:
    context_window: int = 128_000
    max_steps_per_turn: int = 50
    compaction: CompactionConfig = field(default_factory=CompactionConfig)
    deadline_s: float | None = None  # the turn's time limit; None: no limit of its own
    cache_key: str | None = None  # the conversation's, on every request (ModelRequest.cache_key)


class Loop:
    def __init__(
        self,
        *,
        model: ChatModel,
        executor_factory: ExecutorFactory,
        sink: TurnSink,
        folder: HistoryFold,
        system_prompt: str,
        tool_declarations: list[dict[str, Any]],
        needs_approval: ApprovalCheck | None = None,
        config: LoopConfig = LoopConfig(),
        reporter: TurnReporter | None = None,
        deferrals: DeferredResults | None = None,
        live: StepText | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.model = model
        self.executor_factory = executor_factory
        self.sink = sink
        self.folder = folder
        self.system_prompt = system_prompt
        self.tool_declarations = tool_declarations
        self.needs_approval = needs_approval or _nothing_parked
        self.config = config
        self.reporter = reporter or NullReporter()
        self.deferrals = deferrals or NoDeferredResults()
        self.live = live
        self.turn_id = ""
        self.stopping = TurnStopping(sink, config.deadline_s)
        self.signal = self.stopping.signal
        self.projector = IncrementalProjector()
        self.anomalies = ProjectionReporter(telemetry=telemetry)  # repairs, counted by the caller
        self.keeper = ContextKeeper(
            _KeeperHost(self),
            model,
            context_window=config.context_window,
            config=config.compaction,
            request_overhead=estimate_request_overhead(system_prompt, tool_declarations),
        )
        self._seen_ids = seen_call_ids(folder.history)
        self._cut_in_a_row = 0  # steps whose calls the output limit cut, one after another

    # -- the turn ---------------------------------------------------------------------

    def drain(self, grace_s: float) -> None:
        """The worker is restarting: hand this turn back (agent/loop/_stopping.py). On its loop."""
        self.stopping.drain(grace_s)

    def cancel(self, reason: CancelReason = "user_cancelled") -> None:
        """Stop this turn: a Stop click, or its lease lost (agent/loop/_stopping.py). On its loop."""
        self.stopping.cancel(reason)

    async def run_turn(self, turn_id: str, parked: ParkedStep | None = None) -> TurnOutcome:
        self.turn_id = turn_id
        timer = self.stopping.start_deadline()
        try:
            outcome = await self._run(turn_id, parked)
        except TurnStopped as stopped:
            outcome = stopped.outcome
        finally:
            if timer is not None:
                timer.cancel()
        if ENDINGS[outcome.reason].wire is not None:
            await self._end(turn_id, outcome)
        return outcome

    async def _run(self, turn_id: str, parked: ParkedStep | None) -> TurnOutcome:
        steps = 0
        if parked is not None and (waiting := await self._finish_parked(parked)) is not None:
            return waiting
        await self._settle_abandoned_step(turn_id)
        while True:
            await self.stopping.stop_if_cancelled(turn_id, steps)
            await self._take_input(turn_id, steps)
            if steps >= self.config.max_steps_per_turn:
                error = MAX_STEPS_TEXT.format(n=self.config.max_steps_per_turn)
                return TurnOutcome("failed", error=error, steps=steps)
            steps += 1
            result = await self._step(turn_id, steps)
            if isinstance(result, TurnOutcome):
                return result
            if result is not None and not await self._take_input(turn_id, steps):
                return TurnOutcome("completed", answer=result, steps=steps)

    async def _step(self, turn_id: str, step: int) -> TurnOutcome | str | None:
        """One step. Returns the answer text when the model stopped, None to continue."""
        try:
            await self.keeper.check(turn_id, step)
        except ContextTooLargeError as error:
            raise TurnStopped(failed_outcome(str(error), step)) from None
        self.reporter.report(StepStarted(step))
        response, request = await self._ask(turn_id, step)
        step_uuid = f"{turn_id}-s{step}"
        calls = normalize_call_ids(response.message.tool_calls, self._seen_ids)
        usage = answer_usage(response, request, self.keeper.overhead)
        await self._record_step(
            StepBegin(uuid=step_uuid, turn_id=turn_id, step=step, usage=usage), response, calls
        )
        cut = response.finish_reason in CUT_FINISH_REASONS
        answer = response.message.text() + (CUT_ANSWER_NOTE if cut and not calls else "")
        if self.live is not None:  # a streamed answer shows the note too
            self.live.written(step, answer, calls)
        if not calls:
            await self._end_step(step_uuid, turn_id, step, response.finish_reason or "stop", usage)
            return answer
        if cut:
            return await self._refuse_cut_calls(step_uuid, turn_id, step, calls, usage)
        self._cut_in_a_row = 0
        parked = await self.needs_approval(calls, self.signal)
        if parked:
            await self.sink.park(step_uuid, parked)
            return TurnOutcome("awaiting_approval", steps=step)
        deferred = await self._run_batch(step_uuid, step, calls, approver=None)
        if await self._await_deferred(step_uuid, deferred):
            return TurnOutcome("awaiting_agents", steps=step)
        finish = "interrupted" if self.signal.cancelled else "tool_calls"
        await self._end_step(step_uuid, turn_id, step, finish, usage)
        await self.stopping.stop_if_cancelled(turn_id, step)
        return None

    # -- model --------------------------------------------------------------------------

    async def _ask(self, turn_id: str, step: int) -> tuple[ModelResponse, ModelRequest]:
        """The model's answer and the request it answered."""
        strict = False
        overflows = 0
        listener = self.live.listener(step) if self.live is not None else None
        while True:
            request = await self._request(strict, step)
            asked = self.model.complete(request, listener) if listener else self.model.complete(request)
            try:
                return await self.stopping.cancellable(asked, turn_id, step), request
            except StructureRejectedError as error:
                if strict:
                    raise TurnStopped(
                        failed_outcome(f"the model endpoint rejected the request twice: {error}", step)
                    ) from None
                log.warning("provider rejected the message structure; resending once, strictly")
                strict = True
                _restart(listener)
            except ContextOverflowError:
                overflows += 1
                try:
                    await self.keeper.recover_from_overflow(turn_id, step, overflows, request)
                except ContextTooLargeError as error:
                    raise TurnStopped(failed_outcome(str(error), step)) from None
                _restart(listener)
            except ModelError as error:
                raise TurnStopped(failed_outcome(model_failure_text(error), step)) from None

    async def _request(self, strict: bool, step: int) -> ModelRequest:
        history = self.folder.history
        if strict:
            messages = await over_messages(len(history), lambda: project_strict(history, self.anomalies))
        else:
            unseen = len(history) - self.projector.settled
            messages = await over_messages(unseen, lambda: self.projector.project(history, self.anomalies))
        repair = self.anomalies.report()
        if repair is not None:
            await self.sink.repaired(step, repair)
        return ModelRequest.model_construct(
            messages=messages,
            system=self.system_prompt,
            tools=self.tool_declarations,
            max_output_tokens=None,
            cache_key=self.config.cache_key,
        )

    # -- tools --------------------------------------------------------------------------

    async def _refuse_cut_calls(
        self, step_uuid: str, turn_id: str, step: int, calls: list[ToolCall], usage: dict[str, Any]
    ) -> TurnOutcome | None:
        """The output limit cut the answer while it wrote its calls: none runs (the arguments may
        be incomplete, and a truncated write is still valid JSON); the model is told and may try
        again, smaller, once."""
        self.reporter.report(ToolCallsStarted(step, calls))
        for call in calls:
            await self._record_result(step_uuid, call, error_result(CUT_CALL_TEXT.format(name=call.name)))
        await self._end_step(step_uuid, turn_id, step, "length", usage)
        self._cut_in_a_row += 1
        return TurnOutcome("failed", error=CUT_TWICE_TEXT, steps=step) if self._cut_in_a_row > 1 else None

    async def _run_batch(
        self, step_uuid: str, step: int, calls: list[ToolCall], approver: Approver | None
    ) -> list[ToolCall]:
        """Run the calls and record each result; returns the calls whose results are deferred."""
        self.reporter.report(ToolCallsStarted(step, calls))
        adapter = BatchAdapter([call.id for call in calls], self.executor_factory(approver), self.signal)
        by_id = {call.id: call for call in calls}
        deferred: list[ToolCall] = []
        for call in calls:
            adapter.add(call)
        async for call_id, _name, result in adapter.completed():
            if result.deferred:
                deferred.append(by_id[call_id])
            else:
                await self._record_result(step_uuid, by_id[call_id], result)
        return deferred

    async def _record_result(self, step_uuid: str, call: ToolCall, result: ToolResult) -> None:
        payload = ToolResultPayload(output=result.output, is_error=result.is_error or None, note=result.note)
        event = ToolResultEvent(tool_call_id=call.id, result=payload)
        await self.write(AppendLoopEvent(event=event), f"{step_uuid}:result:{call.id}")
        if result.steer is not None:
            await self._steer(f"{step_uuid}:steer:{call.id}", result.steer)
        self.reporter.report(ToolFinished(call, result, aborted=self.signal.cancelled))

    async def _steer(self, once_key: str, message: Message) -> None:
        """Append a message a tool delivers (a loaded skill); while results of the step are
        still pending, the fold defers it until they are in, so it lands after them."""
        await self.write(AppendMessage(message=message), once_key)
        steer = TurnSteer(input=message.text(), origin=message.origin, turn_id=self.turn_id)
        await self.sink.record(steer, f"{once_key}:turn")

    async def _await_deferred(self, step_uuid: str, deferred: list[ToolCall]) -> bool:
        """True when the step must park until its sub-agents answer; otherwise their results
        (or, after a cancel, the aborted text) are recorded now."""
        if not deferred:
            return False
        if self.signal.cancelled:
            for call in deferred:
                await self._record_result(step_uuid, call, error_result(self.signal.aborted_text(call.name)))
            return False
        ready = await self.deferrals.wait(step_uuid, deferred)
        if ready is None:
            self.reporter.report(CallsDeferred(deferred))
            return True
        for call in deferred:
            missing = error_result(texts.produced_no_result(call.name))
            await self._record_result(step_uuid, call, ready.get(call.id, missing))
        return False

    async def _finish_parked(self, parked: ParkedStep) -> TurnOutcome | None:
        """Go on with a parked step: record the results that arrived while it waited, run the
        calls that waited for approval, then close the step (or park it again)."""
        calls = self.folder.pending_calls()
        if self.folder.open_step_uuid != parked.step_uuid or not calls:
            return None
        for call in calls:
            if call.id in parked.results:
                await self._record_result(parked.step_uuid, call, parked.results[call.id])
        waiting = [call for call in calls if call.id not in parked.results]
        deferred = (
            await self._run_batch(parked.step_uuid, 0, waiting, approver_for(parked.decisions))
            if waiting
            else []
        )
        if await self._await_deferred(parked.step_uuid, deferred):
            return TurnOutcome("awaiting_agents")
        end = StepEnd(
            uuid=parked.step_uuid,
            finish_reason="interrupted" if self.signal.cancelled else "tool_calls",
            usage=self.folder.open_step_usage,
        )
        await self.write(AppendLoopEvent(event=end), f"{parked.step_uuid}:end")
        return None

    async def _settle_abandoned_step(self, turn_id: str) -> None:
        """A step left open by a worker that died: close it, so its calls read as interrupted.

        Nothing is re-run: the fold gives each call without a result the interrupted text.
        """
        open_step = self.folder.open_step_uuid
        if open_step is not None:
            end = StepEnd(uuid=open_step, finish_reason=ABANDONED, usage=self.folder.open_step_usage)
            await self.write(AppendLoopEvent(event=end), f"{turn_id}:abandon:{open_step}")

    # -- records ------------------------------------------------------------------------

    async def write(self, record: BaseModel, once_key: str) -> str:
        return (await self.write_all([(record, once_key)]))[0]

    async def write_all(self, records: list[tuple[BaseModel, str]]) -> list[str]:
        record_ids = await self.sink.record_all(records)
        for (record, _), record_id in zip(records, record_ids, strict=True):
            self.folder.apply(record, record_id=record_id)
        return record_ids

    async def _record_step(self, begin: StepBegin, response: ModelResponse, calls: list[ToolCall]) -> None:
        """The model's answer in one write: step.begin (with its usage), its content parts, its calls."""
        step_uuid, turn_id, step = begin.uuid, begin.turn_id, begin.step
        records: list[tuple[BaseModel, str]] = [(AppendLoopEvent(event=begin), f"{step_uuid}:begin")]
        for index, part in enumerate(response.message.content):
            event = ContentPartEvent(step_uuid=step_uuid, part=part, turn_id=turn_id, step=step)
            records.append((AppendLoopEvent(event=event), f"{step_uuid}:part:{index}"))
        for call in calls:
            records.append(
                (AppendLoopEvent(event=call_event(step_uuid, call)), f"{step_uuid}:call:{call.id}")
            )
        await self.write_all(records)

    async def _end_step(
        self, step_uuid: str, turn_id: str, step: int, finish_reason: str, usage: dict[str, Any]
    ) -> None:
        event = StepEnd(uuid=step_uuid, turn_id=turn_id, step=step, finish_reason=finish_reason, usage=usage)
        await self.write(AppendLoopEvent(event=event), f"{step_uuid}:end")

    async def _take_input(self, turn_id: str, step: int) -> bool:
        """Fold in the messages that arrived while the turn ran (they steer its next step)."""
        arrived = await self.sink.take_input()
        for message, record_id in arrived:
            self.folder.apply({"type": "context.append_message", "message": message.model_dump()}, record_id)
            steer = TurnSteer(input=message.text(), origin=message.origin, turn_id=turn_id)
            await self.sink.record(steer, f"{turn_id}:steer:{record_id}")
        return bool(arrived)

    async def _end(self, turn_id: str, outcome: TurnOutcome) -> None:
        reason = ENDINGS[outcome.reason].wire
        assert reason is not None, "a parked turn has not ended"
        record = TurnEnded(turn_id=turn_id, reason=reason, error=outcome.error)
        await self.sink.record(record, f"{turn_id}:ended")


def _restart(listener: StreamListener | None) -> None:
    """The step is asked again: the text heard from the refused attempt is void."""
    if listener is not None:
        listener.on_restart()


class _KeeperHost:
    """The loop as its context keeper sees it (the keeper's `ContextHost`)."""

    def __init__(self, loop: Loop) -> None:
        self._loop = loop

    @property
    def history(self) -> list[Message]:
        return self._loop.folder.history

    async def write(self, record: BaseModel, once_key: str) -> str:
        return await self._loop.write(record, once_key)

    def report(self, event: TurnEvent) -> None:
        self._loop.reporter.report(event)

    async def note_checkpoint(self, through: str) -> None:
        await self._loop.sink.compacted(self._loop.folder.history, through)

    async def cancellable(self, work: Awaitable[T], turn_id: str, step: int) -> T:
        return await self._loop.stopping.cancellable(work, turn_id, step)


async def _nothing_parked(calls: list[ToolCall], signal: CancelSignal) -> list[ParkedCall]:
    return []
