"""The model's text and tool calls, step by step, written for the thread to show live.

`LiveSteps` is the loop's `StepText` port and hears the loop's tool events: it keeps each step's
`LiveStep` and has the turn's publisher (jobs.turn.publisher) write it to Redis
(jobs.session.live) — the first text at once, so the thread shows it as soon as the model
starts writing, then at most every `FLUSH_EVERY_S`, and whenever a tool call starts or ends.
A step's preview is capped at `PREVIEW_CHARS`; its whole text is written once the model is
done with it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from agent.loop.ports import StepStarted, ToolCallsStarted, ToolFinished, TurnEvent, TurnReporter
from agent.messages import ToolCall
from agent.model.base import StreamListener
from jobs.queues import schedule_delivery
from jobs.session import live
from jobs.session.live import LiveStep, LiveTask, TaskStatus
from jobs.session.store import SessionStore
from jobs.turn.publisher import Publisher
from jobs.turn.summaries import short_arguments

FLUSH_EVERY_S = 0.4  # a write per 0.4 s keeps Redis and the deliverer (≤ 1 append/s) well fed
PREVIEW_CHARS = 12_000  # a stream shows at most this much (gateway.delivery.streams)
TITLE_CHARS = 80  # a task's title is the tool's name, which the model wrote: kept short
UNKNOWN_OUTPUT = "outcome unknown: the turn stopped before its result was recorded"


class LiveSteps:
    def __init__(
        self,
        store: SessionStore,
        turn_id: str,
        clock: Callable[[], float] = time.monotonic,
        publisher: Publisher | None = None,
    ) -> None:
        self.store = store
        self.publisher = publisher or Publisher()
        self.turn_id = turn_id
        self.clock = clock
        self.steps: dict[int, LiveStep] = {}
        self._flushed_at: dict[int, float] = {}
        self._dirty: set[int] = set()

    # -- the loop's StepText port ---------------------------------------------------------

    def listener(self, step: int) -> StreamListener:
        self.steps.setdefault(step, LiveStep(turn_id=self.turn_id, step=step))
        return _StepListener(self, step)

    def written(self, step: int, text: str, calls: list[ToolCall]) -> None:
        record = self.steps.get(step) or LiveStep(turn_id=self.turn_id, step=step)
        tasks = [
            LiveTask(
                id=call.id,
                title=call.name[:TITLE_CHARS] or "tool",
                details=short_arguments(call.name, call.arguments) or None,
            )
            for call in calls
        ]
        record = record.model_copy(
            update={"text": text, "tasks": tasks, "done": not calls, "final": not calls}
        )
        self.steps[step] = record
        if text or calls or self._published(step):
            self._publish(step)

    # -- the reporter's events ------------------------------------------------------------

    def report(self, event: TurnEvent) -> None:
        if isinstance(event, StepStarted):
            for step in [s for s, r in self.steps.items() if s < event.step and not r.done]:
                self._close(step)
        elif isinstance(event, ToolCallsStarted):
            self._set_status({call.id for call in event.calls}, "in_progress")
        elif isinstance(event, ToolFinished):
            failed = event.result.is_error or event.aborted
            self._set_status({event.call.id}, "error" if failed else "complete")

    def close(self, *, parked: bool = False) -> None:
        """The turn ended or parked: every open step is done. Calls still running when it ended
        are unknown; a parked turn's calls wait (for a person, or for sub-agents)."""
        for step in [s for s, r in self.steps.items() if not r.done]:
            self._close(step, unknown=not parked)

    # -- internals ------------------------------------------------------------------------

    def add_text(self, step: int, delta: str) -> None:
        record = self.steps[step]
        if len(record.text) >= PREVIEW_CHARS:
            return
        self.steps[step] = record.model_copy(update={"text": record.text + delta})
        since = self.clock() - self._flushed_at.get(step, float("-inf"))
        if since >= FLUSH_EVERY_S:
            self._publish(step)
            return
        if step not in self._dirty:
            self._dirty.add(step)
            asyncio.get_running_loop().call_later(FLUSH_EVERY_S - since, self._flush, step)

    def restart(self, step: int) -> None:
        record = self.steps[step]
        self.steps[step] = record.model_copy(update={"text": "", "attempt": record.attempt + 1})
        if self._published(step):
            self._publish(step)

    def _flush(self, step: int) -> None:
        if step in self._dirty:
            self._publish(step)

    def _close(self, step: int, unknown: bool = True) -> None:
        record = self.steps[step]
        tasks = [
            task if task.status in ("complete", "error") or not unknown else
            task.model_copy(update={"status": "error", "output": UNKNOWN_OUTPUT})
            for task in record.tasks
        ]  # fmt: skip
        self.steps[step] = record.model_copy(update={"tasks": tasks, "done": True})
        if self._published(step):
            self._publish(step)

    def _set_status(self, call_ids: set[str], status: TaskStatus) -> None:
        for step, record in self.steps.items():
            if not any(task.id in call_ids for task in record.tasks):
                continue
            tasks = [t.model_copy(update={"status": status}) if t.id in call_ids else t for t in record.tasks]
            self.steps[step] = record.model_copy(update={"tasks": tasks})
            self._publish(step)

    def _published(self, step: int) -> bool:
        return step in self._flushed_at

    def _publish(self, step: int) -> None:
        self._dirty.discard(step)
        self._flushed_at[step] = self.clock()
        self.publisher.later(lambda: self._write(step), key=("step", step))

    def _write(self, step: int) -> None:
        """The step as it is when this runs (a publication coalesces the changes before it)."""
        live.publish(self.store, self.steps[step])
        schedule_delivery(self.store.redis, self.store.key)


class _StepListener:
    def __init__(self, steps: LiveSteps, step: int) -> None:
        self.steps = steps
        self.step = step

    def on_text(self, delta: str) -> None:
        self.steps.add_text(self.step, delta)

    def on_tool_call(self, call: ToolCall) -> None:
        return None  # calls show once the step is written, with their arguments complete

    def on_restart(self) -> None:
        self.steps.restart(self.step)


class TeeReporter:
    """The turn's card reporter, and the live steps hearing the same events."""

    def __init__(self, card: TurnReporter, steps: LiveSteps) -> None:
        self.card = card
        self.steps = steps

    def report(self, event: TurnEvent) -> None:
        self.card.report(event)
        self.steps.report(event)
