"""Runs tool executions concurrently unless their accesses conflict (context-core.md §4.4).

`add` starts a task at once unless it conflicts with an active task or with any task still
queued (a later task never overtakes a conflicting earlier one). When a task finishes,
resolved or rejected, the queue is rescanned in order. The future `add` returns settles
only after that rescan, so whoever awaits it sees the scheduler's next state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from agent.tools.accesses import Access, AllAccess, access_pair_conflicts, as_accesses

T = TypeVar("T")
StartFn = Callable[[], Awaitable[T]]


class _Entry(Generic[T]):
    __slots__ = ("accesses", "future", "start", "writes")

    def __init__(self, accesses: tuple[Access, ...], start: StartFn[T], future: asyncio.Future[T]) -> None:
        self.accesses = accesses
        self.start = start
        self.future = future
        # Two entries can only conflict when at least one writes (or is `all`); readers are
        # checked against writers only, so a batch of many reads stays linear.
        self.writes = any(isinstance(a, AllAccess) or a.writes for a in accesses)

    def conflicts_with(self, other: _Entry[Any]) -> bool:
        return any(access_pair_conflicts(a, b) for a in self.accesses for b in other.accesses)


class ToolScheduler:
    def __init__(self) -> None:
        self._active: list[_Entry[Any]] = []
        self._active_writers: list[_Entry[Any]] = []
        self._queue: list[_Entry[Any]] = []
        self._rescanning = False
        self._rescan_again = False

    @property
    def active_count(self) -> int:
        return len(self._active)

    @property
    def queued_count(self) -> int:
        return len(self._queue)

    def add(
        self, accesses: Iterable[Access | Mapping[str, Any]] | None, start: StartFn[T]
    ) -> asyncio.Future[T]:
        """Schedule `start()` (called synchronously when the task may run); None accesses = all."""
        entry = _Entry(as_accesses(accesses), start, asyncio.get_running_loop().create_future())
        if self._may_start(entry, self._queue):
            self._start(entry)
        else:
            self._queue.append(entry)
        return entry.future

    def clear_queue(self) -> int:
        """Drop every queued task without starting it (its future is cancelled); returns how many."""
        dropped, self._queue = self._queue, []
        for entry in dropped:
            entry.future.cancel()
        return len(dropped)

    def _may_start(self, entry: _Entry[Any], ahead: list[_Entry[Any]]) -> bool:
        if not entry.accesses:
            return True
        active = self._active if entry.writes else self._active_writers
        if any(entry.conflicts_with(other) for other in active):
            return False
        return not any(entry.conflicts_with(other) for other in ahead if entry.writes or other.writes)

    def _start(self, entry: _Entry[Any]) -> None:
        self._active.append(entry)
        if entry.writes:
            self._active_writers.append(entry)
        try:
            running = asyncio.ensure_future(entry.start())
        except Exception as error:  # start() itself failed: the task is finished, rejected
            self._settle(entry, None, error)
            return
        running.add_done_callback(lambda done: self._on_done(entry, done))

    def _on_done(self, entry: _Entry[Any], done: asyncio.Future[Any]) -> None:
        if done.cancelled():
            self._settle(entry, None, asyncio.CancelledError())
            return
        self._settle(entry, done.result() if done.exception() is None else None, done.exception())

    def _settle(self, entry: _Entry[Any], result: Any, error: BaseException | None) -> None:
        self._active.remove(entry)
        if entry.writes:
            self._active_writers.remove(entry)
        self._rescan()
        if entry.future.done():
            return
        if isinstance(error, asyncio.CancelledError):
            entry.future.cancel()
        elif error is not None:
            entry.future.set_exception(error)
        else:
            entry.future.set_result(result)

    def _rescan(self) -> None:
        # A start() that fails synchronously settles inside the pass; repeat the pass then
        # instead of re-entering it.
        if self._rescanning:
            self._rescan_again = True
            return
        self._rescanning = True
        try:
            self._rescan_again = True
            while self._rescan_again:
                self._rescan_again = False
                self._rescan_once()
        finally:
            self._rescanning = False

    def _rescan_once(self) -> None:
        queue, self._queue = self._queue, []
        still_queued: list[_Entry[Any]] = []
        for entry in queue:
            if entry.future.cancelled():
                continue
            if self._may_start(entry, still_queued):
                self._start(entry)
            else:
                still_queued.append(entry)
        self._queue = still_queued + self._queue
