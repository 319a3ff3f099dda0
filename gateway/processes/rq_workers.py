"""RQ's workers as threadline runs them: turns handed back on SIGTERM, many turns per process.

- `DrainingSimpleWorker` and `DrainingWorker` (the forking one): RQ's warm shutdown (the first
  SIGTERM) tells the running turn to drain (jobs.turn.drain) instead of waiting for it to end;
  the second SIGTERM is RQ's cold shutdown. A job taken off the queue as the first SIGTERM comes
  still runs (`_KeepsAJobInHand`, also on `ConcurrentWorker`).
- `ConcurrentTurnWorker`: up to `concurrency` turns at once in one process. A turn spends nearly
  all its time waiting on the model or a subprocess, so a whole process per turn is mostly idle
  memory. The turns run as tasks on the process's one event loop (jobs.turn.event_loop). RQ's
  bookkeeping stays its own and stays synchronous: every job is dequeued, prepared (an execution
  record in the started registry, with its heartbeat TTL) and finished by RQ's methods in a
  light thread of its own, which also runs the turn's synchronous start and end (lease, history,
  notices) and waits while the turn's steps run on the loop; `rq info` shows the worker busy
  with each execution. Job timeouts use RQ's thread-safe `TimerDeathPenalty`, which cancels the
  turn's task. A job is dequeued only when a slot is free, so a queued turn is never held by a
  worker that cannot start it.
- `ConcurrentWorker`: the same without the event loop, for the delivery worker: each thread
  posts one Slack thread's outbox (one deliverer per Slack thread at a time: its lock).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from types import FrameType
from typing import Any

from redis.client import Pipeline
from rq import SimpleWorker, Worker
from rq.exceptions import StopRequested
from rq.executions import Execution
from rq.job import Job
from rq.queue import Queue
from rq.timeouts import TimerDeathPenalty
from rq.worker.base import WorkerStatus

from jobs import runtime
from jobs.keys import SessionKey
from jobs.log_context import bound, session_fields
from jobs.queues import TURNS_QUEUE
from jobs.settings import Settings
from jobs.turn.drain import request_drain
from jobs.turn.event_loop import log_longest_stall, share_turn_loop

log = logging.getLogger(__name__)

DRAIN_SIGNAL = signal.SIGUSR1  # the forking worker tells its work horse to drain
# What a stopping worker keeps of WORKER_DRAIN_SECONDS to hand its turns back after their tools
# stopped, so it exits before its supervisor kills it.
HAND_BACK_S = 2.0
SLOT_WAIT_S = 5.0  # a worker waiting for a free slot heartbeats this often
PUBSUB_STOP_WAIT_S = 0.05
EXECUTION_HEARTBEAT_S = 10.0  # well inside RQ's execution TTL (min(timeout, 30 s) + 60 s)


def tool_grace_s(settings: Settings) -> float:
    return max(0.5, settings.WORKER_DRAIN_SECONDS - HAND_BACK_S)


class _JobsLogTheirSession:
    """Every line logged while a job runs, RQ's own included, names the job and its session, and
    the worker says which job it took in its own words (RQ's per-job lines are below WARNING,
    gateway.processes.logs): at INFO for a turn, at DEBUG for the many short delivery jobs, whose
    posts the poster logs. RQ's line that a result was discarded is left out: every threadline
    job discards its result (result_ttl=0), so the line says nothing, once per job."""

    log_result_lifespan = False
    name: str

    def perform_job(self, job: Job, queue: Queue, execution: Execution) -> bool:
        with bound(job=job.id, **_session_of(job)):
            level = logging.INFO if queue.name == TURNS_QUEUE else logging.DEBUG
            log.log(level, "worker %s took %s from %s", self.name, job.func_name, queue.name)
            return super().perform_job(job, queue, execution)  # type: ignore[misc, no-any-return]  # RQ's


def say_stopping(worker: str, signum: int) -> None:
    """The worker's own line for RQ's warm shutdown (RQ's logger speaks from WARNING up)."""
    log.info(
        "worker %s stopping (%s): its jobs finish or hand their turns back",
        worker,
        signal.Signals(signum).name,
    )


def _session_of(job: Job) -> dict[str, str]:
    """Every threadline job takes its session key first (jobs.queues)."""
    try:
        return session_fields(SessionKey.parse(str(job.args[0])))
    except Exception:  # not ours, or arguments RQ cannot read: it fails the job itself
        return {}


class _LeavesPubSubAtOnce:
    """RQ's unsubscribe waits for its pub/sub thread with no limit (redis-py's `stop()`), and that
    thread waits up to 60 s for a message: a stopping worker lingered up to a minute. The thread
    is a daemon with nothing left to read; a stopping worker should not wait for it."""

    pubsub: Any
    pubsub_thread: Any

    def unsubscribe(self) -> None:
        if self.pubsub_thread is None:
            return
        self.pubsub.unsubscribe()
        self.pubsub_thread.stop(timeout=PUBSUB_STOP_WAIT_S)
        if not self.pubsub_thread.is_alive():  # else closing would pull the socket from under it
            self.pubsub.close()


class _KeepsAJobInHand:
    """RQ raises StopRequested from its signal handler wherever the main thread happens to be.
    Between the pop of a job (RQ calls `reorder_queues` just after it) and the job's start, that
    drops the job, and its session's queued flag keeps every later job of that session away for
    hours. While a job is in hand a stop request is only noted; RQ's loop sees it once the job
    has started. Each class says where its job has started (`_in_hand = False`)."""

    _in_hand = False
    _stop_requested: bool

    def reorder_queues(self, reference_queue: Queue) -> None:
        self._in_hand = True
        super().reorder_queues(reference_queue)  # type: ignore[misc]  # RQ's

    def _note_stop(self) -> None:
        self._stop_requested = True
        self.set_shutdown_requested_date()  # type: ignore[attr-defined]  # RQ's, untyped


class DrainingSimpleWorker(_JobsLogTheirSession, _LeavesPubSubAtOnce, SimpleWorker):
    """RQ's SimpleWorker whose warm shutdown hands the running turn back (jobs.turn.drain)."""

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        say_stopping(self.name, signum)
        request_drain(tool_grace_s(runtime.settings()))
        super().request_stop(signum, frame)  # type: ignore[no-untyped-call]  # RQ's handler is untyped


class DrainingWorker(_JobsLogTheirSession, _LeavesPubSubAtOnce, _KeepsAJobInHand, Worker):
    """RQ's forking Worker, likewise: the turn runs in the work horse, which hears SIGUSR1. A job
    taken as the stop comes still runs: its horse, forked with the stop requested, drains at once."""

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        say_stopping(self.name, signum)
        if self.horse_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.horse_pid, DRAIN_SIGNAL)
        super().request_stop(signum, frame)  # type: ignore[no-untyped-call]  # RQ's handler is untyped

    def _shutdown(self) -> None:
        if self._in_hand:
            self._note_stop()
            return
        super()._shutdown()  # type: ignore[no-untyped-call]  # untyped in RQ

    def prepare_execution(self, job: Job) -> Execution:
        execution = super().prepare_execution(job)
        self._in_hand = False  # the worker is busy now: RQ's own warm shutdown waits for the horse
        return execution

    def setup_work_horse_signals(self) -> None:
        super().setup_work_horse_signals()  # type: ignore[no-untyped-call]  # untyped in RQ
        signal.signal(DRAIN_SIGNAL, lambda *_: request_drain(tool_grace_s(runtime.settings())))
        if self._stop_requested:  # asked before the fork, too early to be signalled
            request_drain(tool_grace_s(runtime.settings()))


class ConcurrentWorker(_KeepsAJobInHand, DrainingSimpleWorker):
    """Up to `concurrency` jobs at once, each in a light thread of its own (see the module's doc)."""

    death_penalty_class = TimerDeathPenalty  # SIGALRM reaches the main thread only

    def __init__(self, *args: Any, concurrency: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.concurrency = concurrency
        self._slots = threading.BoundedSemaphore(concurrency)
        self._running: dict[threading.Thread, tuple[Job, Execution]] = {}
        self._running_lock = threading.Lock()
        self._torn_down = False
        self._all_done = threading.Event()  # torn down and nothing running: heartbeats end
        threading.Thread(target=self._beat_executions, name="rq executions heartbeat", daemon=True).start()

    # -- taking jobs ------------------------------------------------------------------

    def dequeue_job_and_maintain_ttl(self, timeout: int | None, max_idle_time: int | None = None) -> Any:
        """RQ's dequeue, once a slot is free (heartbeating while every slot is busy)."""
        while not self._slots.acquire(timeout=SLOT_WAIT_S):
            self.heartbeat()
        self._in_hand = False  # whatever became of the last one, nothing is in hand while waiting
        try:
            result = super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)
        except BaseException:
            self._slots.release()
            raise
        if result is None:
            self._slots.release()
        return result

    def execute_job(self, job: Job, queue: Queue) -> None:
        execution = self.prepare_execution(job)
        thread = threading.Thread(
            target=self._perform, args=(job, queue, execution), name=f"turn {job.id}", daemon=True
        )  # daemon: a cold shutdown (the second SIGTERM) ends the process, turns and all
        with self._running_lock:
            self._running[thread] = (job, execution)
        thread.start()
        self._in_hand = False  # started: RQ's loop sees a stop request next time round

    def _perform(self, job: Job, queue: Queue, execution: Execution) -> None:
        try:
            self.perform_job(job, queue, execution)
        except Exception:  # RQ records a job's own failure; this is RQ's bookkeeping failing
            log.exception("job %s ended outside RQ's bookkeeping", job.id)
        finally:
            with self._running_lock:
                self._running.pop(threading.current_thread(), None)
                if self._torn_down and not self._running:
                    self._all_done.set()
            self._slots.release()
            with contextlib.suppress(Exception):  # rq info's view; a Redis blip must not matter here
                self.set_state(WorkerStatus.IDLE)

    def _beat_executions(self) -> None:
        """Keep each running job's execution record (and its place in the started registry) alive,
        as RQ's forking worker does for its one work horse: without it, a turn running longer than
        its heartbeat TTL (90 s) would look abandoned to RQ's registry cleanup."""
        # After a Redis outage this RQ worker's jobs go on (a fresh one takes new jobs): they are
        # beaten to their end.
        while not self._all_done.wait(EXECUTION_HEARTBEAT_S):
            with self._running_lock:
                running = list(self._running.values())
            for job, execution in running:
                try:
                    self.maintain_heartbeats(job, execution)
                except Exception:  # Redis away for a moment: the next beat tries again
                    log.warning("could not renew the execution of job %s", job.id, exc_info=True)

    def set_state(self, state: str, pipeline: Pipeline | None = None) -> None:
        """RQ's state for the worker, which stays busy while any of its jobs runs (RQ marks it
        idle whenever it waits for the next job)."""
        if state == WorkerStatus.IDLE and self.running_jobs():
            state = WorkerStatus.BUSY
        super().set_state(state, pipeline)

    # -- stopping ---------------------------------------------------------------------

    def _shutdown(self) -> None:
        """Stop taking jobs now, even when some run (turns are draining; `teardown` waits), but
        not with a job in hand (`_KeepsAJobInHand`)."""
        self._note_stop()
        if not self._in_hand:
            raise StopRequested()

    def teardown(self) -> None:
        """Let running jobs end (turns hand themselves back, posts complete) before the worker
        leaves RQ's registry. Only on a stop: after a Redis outage they go on while a fresh RQ
        worker takes jobs."""
        if not self._stop_requested:
            self._end_heartbeats()
            super().teardown()  # type: ignore[no-untyped-call]  # untyped in RQ
            return
        deadline = time.monotonic() + runtime.settings().WORKER_DRAIN_SECONDS
        with self._running_lock:
            running = list(self._running)
        for thread in running:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        log_longest_stall()
        self._end_heartbeats()
        super().teardown()  # type: ignore[no-untyped-call]  # untyped in RQ

    def _end_heartbeats(self) -> None:
        with self._running_lock:
            self._torn_down = True
            if not self._running:
                self._all_done.set()

    def running_jobs(self) -> int:
        with self._running_lock:
            return len(self._running)


class ConcurrentTurnWorker(ConcurrentWorker):
    """Up to `concurrency` turns at once, as tasks on the process's one event loop."""

    def __init__(self, *args: Any, concurrency: int, **kwargs: Any) -> None:
        super().__init__(*args, concurrency=concurrency, **kwargs)
        share_turn_loop()
