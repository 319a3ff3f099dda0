"""Incremental projection: the loop re-projects before every step; only the unsettled tail is redone.

`IncrementalProjector.project(history)` returns exactly what `project(history)` returns (output and
anomalies, in order). It keeps the projection of the longest *settled* prefix (see
`agent.projection._pairing.Walk`: no open call, no pending user merge, sizing mode fixed, no partial message,
no trailing anomaly) and walks only the messages after it.

It is correct for any sequence of histories: before reusing its prefix it checks that the history
still starts with the same messages and projects from scratch when it does not (compaction, undo,
clear, tool results pruned in place). The check compares the history with a mirror list whose tail
is first made identical: CPython compares equal-length lists by identity without touching the
messages themselves, which on a long history is what costs (one cache miss per object touched).
It is fast when histories grow by appends, as the loop's do; a `partial` message never enters the
settled prefix, since the fold replaces it when its step settles.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.messages import Message
from agent.projection._pairing import Layout, Walk, layout_of, walk
from agent.projection._strict import strict_repairs
from agent.projection.anomalies import Anomaly
from agent.projection.projector import OnAnomaly


class IncrementalProjector:
    """One per live history (one per agent loop); not shared between threads."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._settled = 0  # history[:_settled] is projected into _out and _anomalies
        self._mirror: list[Message] = []  # the last history seen, to recognise its prefix
        self._first_assistant = -1
        self._out: list[Message] = []
        self._anomalies: list[Anomaly] = []

    @property
    def settled(self) -> int:
        """How many leading messages are settled: the next projection does not redo them."""
        return self._settled

    def project(self, history: Sequence[Message], on_anomaly: OnAnomaly | None = None) -> list[Message]:
        if not isinstance(history, list):
            history = list(history)
        if not self._prefix_intact(history):
            self.reset()
        if self._settled == 0:
            self._mirror = list(history)
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

    def _prefix_intact(self, history: list[Message]) -> bool:
        settled = self._settled
        if settled == 0:
            return True
        if len(history) < settled:
            return False
        mirror = self._mirror
        mirror[settled:] = history[settled:]  # only the prefix can differ now
        if mirror != history:
            return False
        # Value-equal copies (a reload) are as good as the originals, but would be compared field
        # by field on every call: mirror the new objects once.
        if mirror[0] is not history[0] or mirror[settled - 1] is not history[settled - 1]:
            self._mirror = list(history)
        return True

    def _advance(self, history: Sequence[Message], layout: Layout, tail: Walk) -> None:
        if tail.settled_index <= self._settled:
            return
        self._out.extend(tail.out[: tail.settled_out])
        self._anomalies.extend((tail.anomalies or [])[: tail.settled_anomalies])
        self._settled = tail.settled_index
        self._first_assistant = layout.first_assistant_index
