"""The one RQ worker class threadline runs, for turns and deliveries alike: RQ's own `work()` takes
the jobs, the process's turn host (jobs.turn.host) runs them, up to `concurrency` at once.

RQ is used through its public methods only (docs/turn-worker.md 2.9; tests/test_rq_surface.py
records the signature of each method below and of the bookkeeping methods the async perform
calls). Each override fills one gap of RQ's, said on its first line:

- `execute_job` hands the job to the host and returns at once.
- `dequeue_job_and_maintain_ttl` waits for a free slot before popping a job (RQ's `heartbeat()`
  meanwhile), dequeues in rounds and returns None once stopping and drained.
- `request_stop` starts the drain and never raises from the handler (a job popped as the stop
  comes still runs; a turn hands itself back at once); a second signal is the crash path.
- `set_state` keeps the worker BUSY while any execution runs, and writes a state only when it
  changed.
- `heartbeat` beats at most every `HEARTBEAT_S` outside a pipeline: RQ beats before and after
  every job it takes (three round trips each time), written for one job at a time; with hundreds
  running, that was a third of a delivery worker's Redis traffic, for a key whose TTL is minutes.
- `request_stop_execution` also cancels that job's turn.
- `unsubscribe` leaves RQ's pub/sub thread at once. RQ 3.0 joins that thread with `timeout=1`,
  but first calls redis-py's `PubSubWorkerThread.stop()`, which in redis-py 8.2 itself joins it
  with no limit, and the thread sleeps up to 60 s in `get_message`: a stopping worker (even RQ's
  own SimpleWorker) lingered up to a minute.

The async perform is RQ's `perform_job` step by step: `prepare_job_execution`, the job, then
`handle_execution_ended` + `handle_job_success`, or `handle_exception` + `handle_job_failure`,
the synchronous RQ calls in the host's rq lane. A coroutine job function (`run_turn`,
`run_manual_compaction`) is awaited on the host's loop under `asyncio.timeout(job.timeout)`; a
plain one (deliveries, approval expiry) runs `job.perform()` in the host's jobs lane under RQ's
`TimerDeathPenalty`. What RQ's private `_finalize_*` steps do beyond those public calls is not
done: job callbacks and a `Retry` return value (threadline's jobs use neither), and a coroutine
job's return value is not stored (only `Job.perform` sets it; threadline's jobs keep no result).

Execution records need no heartbeat of ours: the class derives from `SimpleWorker`, whose
`get_heartbeat_ttl` is the job's timeout + 60 s (rq 3.0 `worker/worker_classes.py`,
`SimpleWorker.get_heartbeat_ttl`), so `prepare_execution` makes each record outlive its job.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import signal
import sys
import threading
import time
import traceback
from types import FrameType, TracebackType
from typing import Any

from rq import SimpleWorker
from rq.executions import Execution
from rq.job import Job, JobStatus
from rq.queue import Queue
from rq.timeouts import JobTimeoutException, TimerDeathPenalty
from rq.utils import now
from rq.worker.base import WorkerStatus

from jobs import runtime
from jobs.keys import SessionKey
from jobs.log_context import bound, session_fields
from jobs.queues import TURNS_QUEUE
from jobs.settings import Settings
from jobs.turn.host import TurnHost, current_job_id, host

log = logging.getLogger(__name__)

# What a stopping worker keeps of WORKER_DRAIN_SECONDS to hand its turns back after their tools
# stopped, so it exits before its supervisor kills it.
HAND_BACK_S = 2.0
HEARTBEAT_S = 5.0  # a worker's key (TTL: worker_ttl + 60 s) is renewed this often, busy or waiting
DEQUEUE_ROUND_S = 2  # a dequeue waits this long for a job before it looks at `stopping` again
WAKE_S = 0.5  # how often a waiting main thread looks at `stopping` and its jobs
PUBSUB_STOP_WAIT_S = 0.05
# A supervisor's SIGTERM and its process group's can both reach a worker: a second signal this
# soon after the first is the same stop, not a cold one (as RQ's own force-stop handler has it).
SAME_STOP_S = 1.0

ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]


def tool_grace_s(settings: Settings) -> float:
    return max(0.5, settings.WORKER_DRAIN_SECONDS - HAND_BACK_S)


def say_stopping(worker: str, signum: int) -> None:
    """The worker's own line for a warm stop (RQ's logger speaks from WARNING up)."""
    log.info(
        "worker %s stopping (%s): its jobs finish or hand their turns back",
        worker,
        signal.Signals(signum).name,
    )


class ConcurrentWorker(SimpleWorker):
    """Up to `concurrency` jobs at once, run by the process's turn host (see the module's doc)."""

    death_penalty_class = TimerDeathPenalty  # SIGALRM reaches the main thread only, not the jobs lane
    # RQ's dequeue rides out a Redis outage, retrying with a back-off up to this (RQ: 60 s): a
    # worker back within seconds of Redis, as `work_through_outages` waits for it.
    max_connection_wait_time = 5.0

    def __init__(
        self, *args: Any, concurrency: int, turn_host: TurnHost | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.concurrency = concurrency
        self.host = turn_host or host()
        self.host.set_capacity(concurrency)
        self.stopping = False  # a warm stop was asked (public: work_through_outages reads it)
        self.stop_deadline: float | None = None
        self._stop_asked_at = 0.0
        self._changed = threading.Condition()  # a job of this worker object ended
        self._performing: dict[concurrent.futures.Future[None], str] = {}  # -> its execution id
        self._sessions: dict[str, str] = {}  # execution id -> the job's session key
        self._beat_at = -HEARTBEAT_S  # monotonic time of the last heartbeat outside a pipeline
        self._state_written: str | None = None

    # -- RQ's methods, each filling a gap --------------------------------------------------

    def execute_job(self, job: Job, queue: Queue) -> None:
        # RQ gap: running a coroutine job on an existing loop (RQ calls asyncio.run per job).
        try:
            execution = self.prepare_execution(job)
        except BaseException:
            self.host.free_slot()  # the slot the dequeue took for this job
            raise
        session = _session_of(job)
        if session is not None:
            self._sessions[execution.id] = str(session)
        with self._changed:
            future = self.host.submit(self._perform(job, queue, execution))
            self._performing[future] = execution.id
        future.add_done_callback(self._ended)

    def dequeue_job_and_maintain_ttl(
        self, timeout: int | None, max_idle_time: int | None = None
    ) -> tuple[Job, Queue] | None:
        # RQ gap: waiting for capacity before popping a job, and a warm stop that does not raise
        # inside a dequeue (None ends RQ's work loop).
        while not self.host.take_slot(WAKE_S):
            if self.stopping:
                self._drain()
                return None
            self.heartbeat()
        idle_since = time.monotonic()
        while True:
            if self.stopping:
                self.host.free_slot()
                self._drain()
                return None
            idle = None if max_idle_time is None else max_idle_time - (time.monotonic() - idle_since)
            if idle is not None and idle <= 0:
                self.host.free_slot()
                return None
            try:
                if timeout is None:  # burst: one look at the queues
                    result = super().dequeue_job_and_maintain_ttl(None, None)
                else:
                    round_s = min(
                        timeout, DEQUEUE_ROUND_S, int(idle) if idle is not None else DEQUEUE_ROUND_S
                    )
                    result = super().dequeue_job_and_maintain_ttl(max(1, round_s), max(1, round_s))
            except BaseException:
                self.host.free_slot()
                raise
            if result is not None:
                return result  # its slot goes with it to execute_job
            if timeout is None:
                if not self.running_jobs():  # burst ends when the queues are empty and nothing runs
                    self.host.free_slot()
                    return None
                with self._changed:  # a running job may queue another
                    self._changed.wait(WAKE_S)

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        # RQ gap: a warm stop that neither raises inside a dequeue nor needs `_stop_requested`.
        if self.stopping:
            self._stop_at_once(signum, frame)
        say_stopping(self.name, signum)
        self._stop_asked_at = time.monotonic()
        settings = runtime.settings()
        self.stop_deadline = time.monotonic() + settings.WORKER_DRAIN_SECONDS
        self.stopping = True
        signal.signal(signal.SIGINT, self._stop_at_once)
        signal.signal(signal.SIGTERM, self._stop_at_once)
        self.host.drain(tool_grace_s(settings))

    def set_state(self, state: str, pipeline: Any = None) -> None:
        # RQ gap: staying BUSY while several executions run (RQ sets IDLE before each dequeue).
        if state == WorkerStatus.IDLE and self.executions:
            state = WorkerStatus.BUSY
        if pipeline is None and state == self._state_written:
            return
        super().set_state(state, pipeline)
        self._state_written = state  # RQ executes its pipelines at once

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        # RQ gap: RQ beats around every job it takes, as if it ran one at a time.
        if pipeline is None and time.monotonic() - self._beat_at < HEARTBEAT_S:
            return
        super().heartbeat(timeout, pipeline)
        if pipeline is None:
            self._beat_at = time.monotonic()

    def request_stop_execution(self, execution_id: str) -> None:
        # RQ gap: stopping one of several executions of a non-forking worker (kill_horse is a no-op).
        super().request_stop_execution(execution_id)  # RQ marks the job STOPPED should it then fail
        session = self._sessions.get(execution_id)
        if session is not None and not self.host.cancel(session):
            log.warning(
                "execution %s: its turn has no cancel of its own yet; its cancel flag stops it", execution_id
            )

    def unsubscribe(self) -> None:
        # RQ gap: redis-py's PubSubWorkerThread.stop() joins with no limit before RQ's join(timeout=1).
        if self.pubsub_thread is None:
            return
        self.pubsub.unsubscribe()
        self.pubsub_thread.stop(timeout=PUBSUB_STOP_WAIT_S)
        if not self.pubsub_thread.is_alive():  # else closing would pull the socket from under it
            self.pubsub.close()

    # -- ours ------------------------------------------------------------------------------

    def _stop_at_once(self, signum: int, frame: FrameType | None) -> None:
        """A second SIGTERM or SIGINT: the crash path. RQ's `work()` re-raises SystemExit after
        its teardown; the running jobs end with the process (the leases lapse, the janitor)."""
        if time.monotonic() - self._stop_asked_at < SAME_STOP_S:
            return
        log.warning(
            "worker %s: cold stop (%s): its running jobs end with it", self.name, signal.Signals(signum).name
        )
        raise SystemExit(1)

    def _drain(self) -> None:
        """Wait until this worker's jobs have ended (turns handed back, posts recorded), or the
        stop's deadline."""
        deadline = self.stop_deadline or time.monotonic()
        with self._changed:
            while self._performing and time.monotonic() < deadline:
                self._changed.wait(min(WAKE_S, max(0.0, deadline - time.monotonic())))
        self.host.log_longest_stall()

    def running_jobs(self) -> int:
        with self._changed:
            return len(self._performing)

    def _ended(self, future: concurrent.futures.Future[None]) -> None:
        with self._changed:
            execution_id = self._performing.pop(future, "")
            self._sessions.pop(execution_id, None)
            self._changed.notify_all()

    async def _perform(self, job: Job, queue: Queue, execution: Execution) -> None:
        """RQ's `perform_job`, step by step, on the host's loop."""
        session = _session_of(job)
        with bound(job=job.id, **(session_fields(session) if session is not None else {})):
            current_job_id.set(job.id)  # this task's own context: the runner reads it
            level = logging.INFO if queue.name == TURNS_QUEUE else logging.DEBUG
            log.log(level, "worker %s took %s from %s", self.name, job.func_name, queue.name)
            turns = self.host
            try:
                try:
                    await turns.rq(self.prepare_job_execution, job, len(self.queues) == 1)
                    job.started_at = now()
                    timeout = int(job.timeout or self.queue_class.DEFAULT_TIMEOUT)
                    if inspect.iscoroutinefunction(job.func):
                        await _awaited(job, timeout)
                    else:
                        await turns.in_jobs(self._perform_in_thread, job, timeout)
                except Exception:
                    exc_info: Any = sys.exc_info()
                    await turns.rq(self._failed, job, queue, execution, exc_info)
                else:
                    await turns.rq(self._succeeded, job, queue, execution)
            except Exception:  # RQ records a job's own failure; this is RQ's bookkeeping failing
                log.exception("job %s ended outside RQ's bookkeeping", job.id)
            finally:
                turns.free_slot()
                try:
                    await turns.rq(self.set_state, WorkerStatus.IDLE)  # rq info's view
                except Exception:  # a Redis blip must not matter here
                    log.debug("could not mark worker %s idle", self.name, exc_info=True)

    def _perform_in_thread(self, job: Job, timeout: int) -> Any:
        with self.death_penalty_class(timeout, JobTimeoutException, job_id=job.id):  # type: ignore[no-untyped-call]  # RQ's, untyped
            return job.perform()

    def _succeeded(self, job: Job, queue: Queue, execution: Execution) -> None:
        self.handle_execution_ended(job, queue, job.success_callback_timeout)
        self.handle_job_success(
            job=job, queue=queue, started_job_registry=queue.started_job_registry, execution=execution
        )
        job.send_webhooks(JobStatus.FINISHED)

    def _failed(self, job: Job, queue: Queue, execution: Execution, exc_info: ExcInfo) -> None:
        self.handle_execution_ended(job, queue, job.failure_callback_timeout)
        self.handle_exception(job, *exc_info)
        self.handle_job_failure(
            job=job,
            exc_string="".join(traceback.format_exception(*exc_info)),
            queue=queue,
            started_job_registry=queue.started_job_registry,
            execution=execution,
        )


async def _awaited(job: Job, timeout: int) -> None:
    """A coroutine job, awaited under its timeout; running over it fails as RQ's timeout does."""
    func = job.func
    assert func is not None
    try:
        async with asyncio.timeout(timeout if timeout > 0 else None) as limit:
            await func(*job.args, **job.kwargs)
    except TimeoutError:
        if not limit.expired():
            raise
        # Not JobTimeoutException(...): RQ's TimerDeathPenalty rewrites that class's __init__.
        error = JobTimeoutException()
        error.args = (f"Task exceeded maximum timeout value ({timeout} seconds)",)
        raise error from None


def _session_of(job: Job) -> SessionKey | None:
    """Every threadline job takes its session key first (jobs.queues)."""
    try:
        return SessionKey.parse(str(job.args[0]))
    except Exception:  # not ours, or arguments RQ cannot read: it fails the job itself
        return None
