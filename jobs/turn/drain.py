"""A worker asked to stop (a deploy's SIGTERM) hands its running turns back instead of dying with them.

The worker process calls `request_drain` from its signal handler; every turn running in the
process hears it on its own event loop (`agent.loop.Loop.drain`): a model call is abandoned at
once, running tools get until `grace_s` to finish, and the turn ends `handed_back` at its next
step boundary. The runner then queues the turn again for another worker (jobs.turn.runner).
A turn that starts in a process already draining hears it at once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Drainable(Protocol):
    def drain(self, grace_s: float) -> None: ...


# Reentrant: the signal handler runs on the main thread, which may be inside `drainable` then.
_lock = threading.RLock()
_running: dict[int, tuple[asyncio.AbstractEventLoop, Drainable]] = {}
_deadline: float | None = None  # monotonic time by which running tools must have finished


def request_drain(grace_s: float) -> None:
    """Hand back every turn of this process; their tools get `grace_s` (safe in a signal handler:
    it only schedules work on the turns' loops)."""
    global _deadline
    with _lock:
        if _deadline is not None:
            return
        _deadline = time.monotonic() + grace_s
        turns = list(_running.values())
    for loop, turn in turns:
        loop.call_soon_threadsafe(turn.drain, grace_s)


def draining() -> bool:
    return _deadline is not None


@contextmanager
def drainable(turn: Drainable) -> Iterator[None]:
    """While the block runs (on the turn's event loop), a drain request reaches `turn`."""
    loop = asyncio.get_running_loop()
    with _lock:
        _running[id(turn)] = (loop, turn)
        deadline = _deadline
    if deadline is not None:
        turn.drain(max(0.0, deadline - time.monotonic()))
    try:
        yield
    finally:
        with _lock:
            _running.pop(id(turn), None)
