"""Turns loop events into the thread's view: progress-card snapshots and compaction notices.

Events change the card in memory on the turn's event loop; what reaches Redis is published off
it, by the turn's publisher (jobs.turn.publisher)."""

from __future__ import annotations

import time

from agent.loop.ports import (
    CompactionFinished,
    CompactionStarted,
    StepStarted,
    ToolCallsStarted,
    ToolFinished,
    TurnEvent,
)
from jobs.queues import schedule_delivery
from jobs.session.notices import CompactionNotice, ProgressNotice, ToolLine, ToolState, TurnCard, TurnState
from jobs.session.store import SessionStore
from jobs.turn.publisher import Publisher
from jobs.turn.summaries import short_arguments

COMPACTING_NOTE = "compacting the conversation…"


class ProgressReporter:
    """Keeps the turn's card and posts a snapshot whenever it changes; the store keeps the newest."""

    def __init__(
        self,
        store: SessionStore,
        turn_id: str,
        started_at: float | None = None,
        publisher: Publisher | None = None,
    ) -> None:
        self.store = store
        self.publisher = publisher or Publisher()
        now = started_at or time.time()
        self.card = TurnCard(turn_id=turn_id, state="running", started_at=now, updated_at=now)

    def start(self) -> None:
        self._publish()

    def report(self, event: TurnEvent) -> None:
        if isinstance(event, StepStarted):
            self._update(steps=event.step)
        elif isinstance(event, ToolCallsStarted):
            self._add_tools(event)
        elif isinstance(event, ToolFinished):
            self._finish_tool(event)
        elif isinstance(event, CompactionStarted):
            self._notice(
                CompactionNotice(
                    turn_id=self.card.turn_id, state="started", tokens_before=event.tokens_before
                )
            )
            self._update(note=COMPACTING_NOTE)
        elif isinstance(event, CompactionFinished):
            self._compaction_finished(event)

    def finish(self, state: TurnState) -> None:
        """The final snapshot: tools still marked running are not known to have finished."""
        tools = [
            line if line.state != "running" else line.model_copy(update={"state": "unknown"})
            for line in self.card.tools
        ]
        self._update(state=state, tools=tools, note=None)

    # -- internals ----------------------------------------------------------------------

    def _add_tools(self, event: ToolCallsStarted) -> None:
        now = time.time()
        lines = [
            ToolLine(
                tool_call_id=call.id,
                name=call.name,
                summary=short_arguments(call.name, call.arguments),
                state="running",
                started_at=now,
            )
            for call in event.calls
        ]
        self._update(tools=[*self.card.tools, *lines])

    def _finish_tool(self, event: ToolFinished) -> None:
        state: ToolState = "aborted" if event.aborted else ("failed" if event.result.is_error else "done")
        now = time.time()
        tools = [
            line.model_copy(update={"state": state, "ended_at": now})
            if line.tool_call_id == event.call.id
            else line
            for line in self.card.tools
        ]
        self._update(tools=tools)

    def _compaction_finished(self, event: CompactionFinished) -> None:
        if event.outcome in ("done", "pruned"):
            done = event.outcome == "done"
            notice = CompactionNotice(
                turn_id=self.card.turn_id,
                state=event.outcome,
                compacted=event.compacted if done else None,
                pruned=None if done else event.pruned,
                dropped=event.dropped or None,
                tokens_before=event.tokens_before,
                tokens_after=event.tokens_after,
            )
            self._notice(notice)
        elif event.outcome in ("failed", "stale"):
            self._notice(CompactionNotice(turn_id=self.card.turn_id, state="failed", detail=event.detail))
        self._update(note=None)

    def _update(self, **changes: object) -> None:
        self.card = self.card.model_copy(update={**changes, "updated_at": time.time()})
        self._publish()

    def _publish(self) -> None:
        self.publisher.later(self._post_card, key="card")

    def _post_card(self) -> None:
        """The card as it is when this runs (a publication coalesces the changes before it)."""
        self._post(ProgressNotice(turn_id=self.card.turn_id, card=self.card))

    def _notice(self, notice: CompactionNotice) -> None:
        self.publisher.later(lambda: self._post(notice))

    def _post(self, notice: CompactionNotice | ProgressNotice) -> None:
        self.store.post_notice(notice)
        schedule_delivery(self.store.redis, self.store.key)
