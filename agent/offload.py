"""Where the core's blocking and CPU-bound work runs: off the turns' event loop, in named lanes.

A worker runs many turns as tasks on one loop (jobs.turn.host): whatever blocks there (a
file system call, a Redis round trip of a port, a DNS lookup) or keeps a core busy (projecting a
long history) holds every other turn of the process. The core sends such work here, and only
here (tests/test_offload.py fails on an `asyncio.to_thread` or `run_in_executor` elsewhere in
`agent/`):

- `in_thread`: the *tools lane*, a bounded pool of named threads (`threadline-offload-N`) for
  work that waits: file tools, spill files, a port's synchronous I/O, DNS. It is not the loop's
  default executor (6 threads on 2 cores), so a few calls stuck in a read cannot starve the
  rest, and a stuck thread is named in a stack dump. The caller's context variables (the log
  context) go with the work, as with `asyncio.to_thread`.
- `in_process`: the *CPU lane*, processes from a fork server at a lower priority, for work that
  keeps a core busy and must not hold the worker's GIL (grep's matching). Its work and arguments
  must pickle; it is read-only and bounded in time, so a cancelled turn does not wait for it.
- `over_messages`: work over a whole history, inline when short (a thread hop costs more) and in
  the tools lane when long.

The pool processes come from a fork server, never forked from the worker itself: the worker has
many threads, and forking a threaded process copies their locks in whatever state they are.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# Threads of the tools lane: enough that a few calls stuck on a hung mount or a slow DNS answer
# leave room for every other turn's file tools; each idle thread costs only its stack.
THREADS = 32
THREAD_PREFIX = "threadline-offload"
PRELOADED = ["agent.tools.builtin._grep"]  # imported once by the fork server, not by every task
# Below the worker's own priority: on a busy machine the turns' coordination (model calls, posts,
# heartbeats) goes first and a long search waits, not the other way round.
NICENESS = 10
INLINE_MAX_MESSAGES = 2_000  # projecting this many takes ~20 ms: a thread hop is not worth it

_threads: ThreadPoolExecutor | None = None
_processes: ProcessPoolExecutor | None = None
_lock = threading.Lock()


def _thread_lane() -> ThreadPoolExecutor:
    global _threads
    with _lock:
        if _threads is None:
            _threads = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix=THREAD_PREFIX)
        return _threads


def process_lane() -> ProcessPoolExecutor:
    global _processes
    with _lock:
        if _processes is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(PRELOADED)
            _processes = ProcessPoolExecutor(
                max_workers=os.cpu_count() or 2, mp_context=context, initializer=os.nice, initargs=(NICENESS,)
            )
        return _processes


async def in_thread(work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`work(*args, **kwargs)` in the tools lane, with the caller's context variables."""
    call = functools.partial(contextvars.copy_context().run, work, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_thread_lane(), call)


async def in_process(work: Callable[..., T], *args: Any) -> T:
    """`work(*args)` in the CPU lane; `work` and its arguments must pickle."""
    return await asyncio.get_running_loop().run_in_executor(process_lane(), work, *args)


async def over_messages(count: int, work: Callable[[], T]) -> T:
    """`work()`, which goes through `count` messages: in the tools lane when there are many."""
    if count <= INLINE_MAX_MESSAGES:
        return work()
    return await in_thread(work)
