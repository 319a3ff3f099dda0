"""One event loop for all the turns of a worker process.

A turn spends nearly all its time awaiting the model or a subprocess, so the turns of a process
run as tasks on one loop, in a thread of its own (`share_turn_loop`). What RQ does around a
job (dequeue, execution record, result) and a turn's synchronous start and end (lease, history
fold, notices) stay in the job's thread; `run_coroutine` hands the turn's steps to the loop and
waits for them. Without a shared loop (a forking worker, a test, a command) it is `asyncio.run`.

CPU-bound and blocking steps are kept off the loop (agent/offload.py: the file tools and the
projection of a long history run in its lane of threads; grep's matching in its processes); the loop
watches itself and logs any stall longer than STALL_WARN_S, and its longest stall when the
process stops, so a step that blocks it does not go unseen.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

from jobs.session.lease import keeper

log = logging.getLogger(__name__)

T = TypeVar("T")

WAKE_S = 2.0  # a waiting job thread wakes this often, so RQ's job timeout (a backstop) reaches it
UNWIND_S = 30.0  # how long a job thread waits for its cancelled turn to unwind (tools killed)
STALL_PROBE_S = 0.1
STALL_WARN_S = 1.0
ANSWERS_WITHIN_S = 5.0  # a loop stalled longer stops renewing its turns' leases (jobs.session.lease)


class TurnEventLoop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.longest_stall_s = 0.0
        self.probed_at = time.monotonic()  # when the stall probe last ran: the loop answers
        self._thread = threading.Thread(target=self._run, name="turns event loop", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.create_task(self._watch_stalls())
        self.loop.run_forever()

    async def _watch_stalls(self) -> None:
        while True:
            asked = time.monotonic()
            await asyncio.sleep(STALL_PROBE_S)
            self.probed_at = time.monotonic()
            stall = self.probed_at - asked - STALL_PROBE_S
            self.longest_stall_s = max(self.longest_stall_s, stall)
            if stall > STALL_WARN_S:
                log.warning("the turns' event loop stalled for %.2f s: a step blocked it", stall)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` as a task on the loop and wait for it. An exception raised into the
        waiting thread (RQ's job timeout) cancels the task and waits for it to unwind first."""
        unwound = threading.Event()
        # A task takes the context of the thread that creates it, here the loop's: the caller's
        # is handed over, so the turn's log lines name their thread and turn (jobs.log_context).
        in_callers_context = _in_context(coroutine, contextvars.copy_context())
        future = asyncio.run_coroutine_threadsafe(_noting_end(in_callers_context, unwound), self.loop)
        try:
            while not future.done():
                concurrent.futures.wait([future], timeout=WAKE_S)
        except BaseException:
            future.cancel()
            unwound.wait(UNWIND_S)
            raise
        return future.result()


async def _in_context(coroutine: Coroutine[Any, Any, T], context: contextvars.Context) -> T:
    """Await `coroutine` as a task of its own running in `context` (cancelling this cancels it)."""
    return await asyncio.get_running_loop().create_task(coroutine, context=context)


async def _noting_end(coroutine: Coroutine[Any, Any, T], ended: threading.Event) -> T:
    try:
        return await coroutine
    finally:
        ended.set()


_shared: TurnEventLoop | None = None
_shared_lock = threading.Lock()


def share_turn_loop() -> TurnEventLoop:
    """From now on, this process runs its turns on one loop (started once, kept across RQ workers
    started after a Redis outage, so their turns go on)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = TurnEventLoop()
            loop = _shared
            keeper().keep_while(lambda: time.monotonic() - loop.probed_at < ANSWERS_WITHIN_S)
        return _shared


def shared_turn_loop() -> TurnEventLoop | None:
    return _shared


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    loop = _shared
    if loop is None:
        return asyncio.run(coroutine)
    return loop.run(coroutine)


def log_longest_stall() -> None:
    if _shared is not None:
        with contextlib.suppress(Exception):
            log.info("the turns' event loop stalled at most %.3f s", _shared.longest_stall_s)
