"""CPU-bound tool work, run in a pool of separate processes.

A worker runs many turns in one process (jobs.turn.event_loop). A thread takes CPU-bound work off
the event loop but not off the GIL: ten turns grepping 40 MB each in threads kept every other
turn of the process waiting for seconds (`python -m bench.concurrency --heavy 10`). Work sent
here runs in other processes, so only its result costs the worker anything.

The pool's processes come from a fork server, never forked from the worker itself: the worker
has many threads, and forking a threaded process copies their locks in whatever state they are.
Work sent here is read-only and bounded in time, so a cancelled turn does not wait for it: it
gives up the result and the process finishes on its own (see agent/tools/builtin/_grep.py).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

PRELOADED = ["agent.tools.builtin._grep"]  # imported once by the fork server, not by every task
# Below the worker's own priority: on a busy machine the turns' coordination (model calls, posts,
# heartbeats) goes first and a long search waits, not the other way round.
NICENESS = 10

_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def _cpu_pool() -> ProcessPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(PRELOADED)
            _pool = ProcessPoolExecutor(
                max_workers=os.cpu_count() or 2, mp_context=context, initializer=os.nice, initargs=(NICENESS,)
            )
        return _pool


async def in_cpu_pool(work: Callable[..., T], *args: Any) -> T:
    """`work(*args)` in the pool; `work` and its arguments must pickle."""
    return await asyncio.get_running_loop().run_in_executor(_cpu_pool(), work, *args)
