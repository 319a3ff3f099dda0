"""The turn host: one per worker process, owning THE event loop every turn of the process runs on.

A turn spends nearly all its time awaiting the model or a subprocess, so the turns of a process
run as tasks on one loop, in a thread of its own (`turns-loop`), created once and kept across
the RQ worker objects `gateway.processes.worker.work_through_outages` makes after a Redis
outage (their turns go on). The RQ adapter (gateway.processes.concurrent_worker) hands each job
to it; what may block runs off the loop in named lanes of threads, each visible in a stack dump:

- `rq` (1 thread, `turns-rq`): every synchronous RQ bookkeeping call, so RQ's worker object is
  touched by two threads only, RQ's main loop and this one.
- `state` (`TURN_CONCURRENCY // 2 + 4` threads, `turns-state`): a turn's synchronous start and
  end (lease, history fold, workspace, attachments, notices, state, hand back).
- `jobs` (`turns-jobs`): synchronous job functions (deliveries, approval expiry), sized to the
  process's slots.

The core's own lanes (the tools lane and the CPU lane) are agent.offload's. The lanes carry the
caller's context variables (the log context), as `asyncio.to_thread` does, and may be awaited
from any loop: a test or a command runs `asyncio.run(run_turn(key))` and the turn still registers
with the process's host (`host()`, made on first use).

The host also drains (a deploy's SIGTERM: every running turn `Loop.drain(grace)`; a turn starting
while draining hears it at once), keeps the registry of running turns by session key (for a
pushed cancel: `running`, `turns`, `cancel`), the slots the adapter takes before it dequeues, and
a stall probe: the loop watches itself and logs any stall longer than `LOOP_STALL_WARN_MS`, and
its longest stall when the process stops, so a step that blocks it does not go unseen.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from agent.tools.texts import CancelReason
from jobs.session.lease import keeper
from jobs.settings import Settings
from jobs.turn.loop_watch import blocked, kernel_wait, python_at

log = logging.getLogger(__name__)

T = TypeVar("T")

STALL_PROBE_S = 0.1
DEFAULT_STALL_WARN_MS = 1000
ANSWERS_WITHIN_S = 5.0  # a loop stalled longer stops renewing its turns' leases (jobs.session.lease)
RQ_THREADS = 1  # RQ's bookkeeping is serial: about 1 ms a job at normal Redis latency

# The RQ job the current task or lane thread runs: set by the adapter's async perform and read by
# the runner (rq.get_current_job() reads RQ's own variable, which only `Job.perform` sets).
current_job_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("tl_job_id", default=None)


class Turn(Protocol):
    """What the host asks of a running turn (agent.loop.Loop)."""

    def drain(self, grace_s: float) -> None: ...

    def cancel(self, reason: CancelReason = "user_cancelled") -> None: ...


class TurnHost:
    def __init__(self, turn_concurrency: int = 16, stall_warn_ms: int = DEFAULT_STALL_WARN_MS) -> None:
        self.loop = asyncio.new_event_loop()
        self.role = "turns"  # the worker's, which its stall lines name: a delivery worker has a host too
        self.longest_stall_s = 0.0
        self.loop_cpu_s = 0.0  # CPU time the loop's thread ran, as of the probe's last run
        self.probed_at = time.monotonic()  # when the stall probe last ran: the loop answers
        self.stall_warn_s = stall_warn_ms / 1000
        self._rq = _lane(RQ_THREADS, "turns-rq")
        self._state = _lane(turn_concurrency // 2 + 4, "turns-state")
        self._jobs: concurrent.futures.ThreadPoolExecutor | None = None
        # Reentrant: the signal handler runs on the main thread, which may hold it then.
        self._lock = threading.RLock()
        self._running: dict[str, tuple[asyncio.AbstractEventLoop, Turn]] = {}
        self._deadline: float | None = None  # monotonic time by which running tools must have finished
        self._slots: threading.BoundedSemaphore | None = None
        self._thread = threading.Thread(target=self._run, name="turns-loop", daemon=True)
        self._thread.start()
        threading.Thread(target=self._watch_from_beside, name="turns-watch", daemon=True).start()

    # -- the loop -------------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.create_task(self._watch_stalls())
        self.loop.run_forever()

    async def _watch_stalls(self) -> None:
        while True:
            asked = time.monotonic()
            await asyncio.sleep(STALL_PROBE_S)
            self.probed_at = time.monotonic()
            self.loop_cpu_s = time.thread_time()
            stall = self.probed_at - asked - STALL_PROBE_S
            self.longest_stall_s = max(self.longest_stall_s, stall)
            if stall > self.stall_warn_s:
                log.warning(
                    "the %s worker's event loop stalled for %.2f s: a step blocked it", self.role, stall
                )

    def _watch_from_beside(self) -> None:
        """While the probe is late, look at the loop thread each probe interval; one seen twice
        in a row sleeping in the same kernel wait that is not its own is blocked by a call."""
        seen: str | None = None
        while True:
            time.sleep(STALL_PROBE_S)
            late = time.monotonic() - self.probed_at > 2 * STALL_PROBE_S
            wait = kernel_wait(self._thread.native_id) if late else None
            if wait == seen and blocked(wait):
                where = python_at(self._thread.ident)
                log.warning(
                    "the %s worker's event loop is blocked in the kernel (%s) at %s", self.role, wait, where
                )
                wait = None  # once per wait seen twice: a long block is logged every other interval
            seen = wait

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coroutine` as a task on the loop, in the caller's context (the log fields), from
        any thread; the returned future says when it ended."""
        context = contextvars.copy_context()

        async def in_callers_context() -> T:
            return await asyncio.get_running_loop().create_task(coroutine, context=context)

        return asyncio.run_coroutine_threadsafe(in_callers_context(), self.loop)

    def log_longest_stall(self) -> None:
        """With the CPU time its thread ran: a loop busy with its turns' own steps stalls too."""
        log.info(
            "the %s worker's event loop stalled at most %.3f s; its thread ran %.2f CPU-s",
            self.role,
            self.longest_stall_s,
            self.loop_cpu_s,
        )

    # -- lanes ----------------------------------------------------------------------------

    async def rq(self, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`work(*args, **kwargs)` in the rq lane: a synchronous RQ call."""
        return await _in(self._rq, work, *args, **kwargs)

    async def blocking(self, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`work(*args, **kwargs)` in the state lane: a turn's synchronous start or end."""
        return await _in(self._state, work, *args, **kwargs)

    async def in_jobs(self, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`work(*args, **kwargs)` in the jobs lane: a synchronous job function."""
        with self._lock:
            if self._jobs is None:
                self._jobs = _lane(self.capacity or 8, "turns-jobs")
        return await _in(self._jobs, work, *args, **kwargs)

    # -- slots ----------------------------------------------------------------------------

    def set_capacity(self, jobs: int) -> None:
        """How many jobs the process runs at once; set once, by the first RQ worker object (a
        fresh one after an outage shares the slots its predecessor's jobs still hold)."""
        with self._lock:
            if self._slots is None:
                self._slots = threading.BoundedSemaphore(jobs)
                self.capacity = jobs

    capacity = 0

    def take_slot(self, timeout_s: float) -> bool:
        assert self._slots is not None, "set_capacity first"
        return self._slots.acquire(timeout=timeout_s)

    def free_slot(self) -> None:
        assert self._slots is not None
        self._slots.release()

    # -- draining and the running turns ---------------------------------------------------

    def drain(self, grace_s: float) -> None:
        """Hand back every turn of this process; their tools get `grace_s` (safe in a signal
        handler: it only schedules work on the turns' loops)."""
        with self._lock:
            if self._deadline is not None:
                return
            self._deadline = time.monotonic() + grace_s
            turns = list(self._running.values())
        for loop, turn in turns:
            loop.call_soon_threadsafe(turn.drain, grace_s)

    @property
    def draining(self) -> bool:
        return self._deadline is not None

    @contextmanager
    def running_turn(self, session_key: str, turn: Turn) -> Iterator[None]:
        """While the block runs (on the loop the turn runs on), the turn is this process's turn of
        `session_key`: a drain reaches it (at once when the host is draining already)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            self._running[session_key] = (loop, turn)
            deadline = self._deadline
        if deadline is not None:
            turn.drain(max(0.0, deadline - time.monotonic()))
        try:
            yield
        finally:
            with self._lock:
                if self._running.get(session_key, (None, None))[1] is turn:
                    del self._running[session_key]

    def running(self, session_key: str) -> Turn | None:
        """The turn of `session_key` this process runs, if any."""
        with self._lock:
            entry = self._running.get(session_key)
        return entry[1] if entry is not None else None

    def turns(self) -> list[str]:
        """The session keys of the turns this process runs."""
        with self._lock:
            return list(self._running)

    def answers(self) -> bool:
        """Whether the loop ran its stall probe lately; the lease keeper renews only while it does."""
        return time.monotonic() - self.probed_at < ANSWERS_WITHIN_S

    def cancel(self, session_key: str, reason: CancelReason = "user_cancelled") -> bool:
        """Cancel the running turn of `session_key` without draining it (RQ's
        `send_stop_execution_command` comes here); False when this process does not run it."""
        with self._lock:
            entry = self._running.get(session_key)
        if entry is None:
            return False
        loop, turn = entry
        loop.call_soon_threadsafe(turn.cancel, reason)
        return True


def _lane(threads: int, name: str) -> concurrent.futures.ThreadPoolExecutor:
    return concurrent.futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)


async def _in(lane: concurrent.futures.Executor, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    call = functools.partial(contextvars.copy_context().run, work, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(lane, call)


_host: TurnHost | None = None
_host_lock = threading.Lock()


def host() -> TurnHost:
    """This process's host, made on first use (sized by the settings, when they load)."""
    global _host
    with _host_lock:
        if _host is None:
            try:
                settings = Settings.load()
                _host = TurnHost(settings.TURN_CONCURRENCY, settings.LOOP_STALL_WARN_MS)
            except SystemExit:  # settings that do not load (a test, a command): the defaults
                _host = TurnHost()
            keeper().keep_while(_host.answers)
        return _host


def current_host() -> TurnHost | None:
    """This process's host if one was made (its loop is the long-lived one, jobs.runtime)."""
    return _host
