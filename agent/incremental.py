"""Incremental projection: the loop re-projects before every step; only the unsettled tail is redone.

`IncrementalProjector.project(history)` returns exactly what `project(history)` returns (output and
anomalies, in order). It keeps the projection of the longest *settled* prefix (see
`agent.pairing.Walk`: no open call, no pending user merge, sizing mode fixed, no partial message)
and walks only the messages after it.

Contract with the caller: between calls the history only grows by appends, except a message that
is still `partial` may be replaced. Anything else (compaction, undo, clear, a reload from Redis)
must change the first message or the last settled one, which the projector checks by identity in
O(1) before reusing its prefix; otherwise it projects from scratch. Call `reset()` after editing a
settled message in place of the same object.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.anomalies import Anomaly
from agent.messages import Message
from agent.pairing import Layout, Walk, layout_of, walk
from agent.projection import OnAnomaly
from agent.strict import strict_repairs


class IncrementalProjector:
    """One per live history (one per agent loop); not shared between threads."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._settled = 0  # the prefix history[:_settled] is projected into _out / _anomalies
        self._first: Message | None = None
        self._last: Message | None = None
        self._first_assistant = -1
        self._out: list[Message] = []
        self._anomalies: list[Anomaly] = []

    @property
    def settled(self) -> int:
        """How many leading messages are settled (for tests and diagnostics)."""
        return self._settled

    def project(self, history: Sequence[Message], on_anomaly: OnAnomaly | None = None) -> list[Message]:
        if not self._prefix_intact(history):
            self.reset()
        start = self._settled
        layout = layout_of(history, self._first_assistant if start else None)
        tail = walk(history, layout, start, record=True)
        output = self._out + tail.out
        if on_anomaly is not None:
            for anomaly in self._anomalies:
                on_anomaly(anomaly)
            for anomaly in tail.anomalies or ():
                on_anomaly(anomaly)
        self._advance(history, layout, tail)
        return output

    def project_strict(
        self, history: Sequence[Message], on_anomaly: OnAnomaly | None = None
    ) -> list[Message]:
        return strict_repairs(self.project(history, on_anomaly), on_anomaly)

    def _prefix_intact(self, history: Sequence[Message]) -> bool:
        settled = self._settled
        if settled == 0:
            return True
        return len(history) >= settled and history[0] is self._first and history[settled - 1] is self._last

    def _advance(self, history: Sequence[Message], layout: Layout, tail: Walk) -> None:
        if tail.settled_index <= self._settled:
            return
        self._out.extend(tail.out[: tail.settled_out])
        self._anomalies.extend((tail.anomalies or [])[: tail.settled_anomalies])
        self._settled = tail.settled_index
        self._first = history[0]
        self._last = history[tail.settled_index - 1]
        self._first_assistant = layout.first_assistant_index
