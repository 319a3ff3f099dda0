"""The one RQ worker class (gateway.processes.concurrent_worker), with real RQ workers on a real Redis.

- It takes a job only with a free slot, and `rq info` sees it busy with each execution.
- What it leaves in Redis (the job hash, the registries, its counters) after a success, a failure
  and a timeout is what RQ's own SimpleWorker leaves for the same job.
- A warm stop (SIGTERM) ends `work()` once the jobs have ended; a second SIGTERM is the crash path;
  a job taken off the queue as the stop comes still runs, and a turn starting then hands back.
- What is logged about each job: the worker's own line that it took one (INFO for a turn), and
  RQ's per-job lines only at LOG_LEVEL=DEBUG (gateway.processes.logs).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from redis import Redis
from rq import Queue, SimpleWorker, Worker
from rq.job import Job
from rq.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry

from gateway.processes.concurrent_worker import ConcurrentWorker
from gateway.processes.logs import rq_worker_level
from gateway.sandbox.stack import SOURCE_ROOT
from jobs.queues import SLACK_QUEUE, TURNS_QUEUE, queue
from jobs.turn.host import TurnHost, host
from tests.polling import wait_for

HERE = "tests.gateway.processes.test_concurrent_worker"
QUEUE = "tests-concurrent"
STARTED, RELEASE, DONE = "tests:cw:started", "tests:cw:release", "tests:cw:done"
HELD_DONE = "tests:cw:held_done"
# A worker process as `threadline worker` runs one, on a queue of the test's own; argv: Redis URL,
# queue, concurrency, and "stop-after-pop" for a worker that is sent SIGTERM just after a pop.
WORKER = """
import logging, os, signal, sys
logging.basicConfig(level=logging.INFO)
from redis import Redis
from gateway.processes.concurrent_worker import ConcurrentWorker
from gateway.processes.worker import work_through_outages
from jobs.queues import queue

class StoppedAfterPop(ConcurrentWorker):
    def reorder_queues(self, reference_queue):  # RQ calls it just after the pop
        super().reorder_queues(reference_queue)
        os.kill(os.getpid(), signal.SIGTERM)

r = Redis.from_url(sys.argv[1])
q = queue(r, sys.argv[2])
kind = StoppedAfterPop if sys.argv[4:] == ["stop-after-pop"] else ConcurrentWorker
workers = []
def worker():
    workers.append(kind([q], connection=r, serializer=q.serializer, concurrency=int(sys.argv[3])))
    return workers[-1]
work_through_outages(worker)
print("stopping:", workers[-1].stopping, flush=True)
"""


# -- the jobs ------------------------------------------------------------------------------


async def held(url: str) -> None:
    """Runs until the test releases it."""
    redis = Redis.from_url(url)
    redis.incr(STARTED)
    while not redis.exists(RELEASE):
        await asyncio.sleep(0.02)
    redis.incr(HELD_DONE)


def mark_done(url: str) -> str:
    Redis.from_url(url).incr(DONE)
    return "done"


async def mark_done_async(url: str) -> None:
    Redis.from_url(url).incr(DONE)


def fails(url: str) -> None:
    raise ValueError("a job's own failure")


async def fails_async(url: str) -> None:
    raise ValueError("a job's own failure")


def overruns(url: str) -> None:
    """A job whose work (10 s) outlasts its 1 s timeout: the waiting is the behaviour under test."""
    for _ in range(200):
        time.sleep(0.05)


async def overruns_async(url: str) -> None:
    await asyncio.sleep(10)


class Heard:
    def __init__(self) -> None:
        self.drained: list[float] = []

    def drain(self, grace_s: float) -> None:
        self.drained.append(grace_s)


async def a_turn_starting(url: str) -> None:
    """Registers as a turn does (jobs.turn.runner) and notes whether it heard a drain at once."""
    turn = Heard()
    with host().running_turn("T1:C1:1.0", turn):
        Redis.from_url(url).set(DONE, "handed back" if turn.drained else "went on")


# -- helpers -------------------------------------------------------------------------------


def start_worker(
    tmp_path: Path, redis_url: str, concurrency: int, *extra: str
) -> tuple[subprocess.Popen[bytes], Path]:
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-c", WORKER, redis_url, QUEUE, str(concurrency), *extra],
            cwd=SOURCE_ROOT,
            stdout=log,
            stderr=log,
            env={**os.environ, "WORKER_DRAIN_SECONDS": "10"},
        )
    return process, log_path


def registered(redis: Redis) -> list[Worker]:
    return [worker for worker in Worker.all(connection=redis) if QUEUE in worker.queue_names()]


def stopped(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait(timeout=10)


# -- slots and rq info ---------------------------------------------------------------------


def test_a_17th_job_stays_queued_while_16_run_and_rq_info_shows_them(
    redis: Redis, redis_url: str, tmp_path: Path
) -> None:
    jobs = queue(redis, QUEUE)
    for _ in range(17):
        jobs.enqueue(f"{HERE}.held", redis_url, result_ttl=0)
    process, log_path = start_worker(tmp_path, redis_url, 16)
    try:
        wait_for(lambda: redis.get(STARTED) == b"16", what="16 jobs to start")
        wait_for(lambda: registered(redis), what="the worker's registration")
        [worker] = registered(redis)
        assert jobs.count == 1, "the 17th job was taken by a worker with no free slot"
        assert redis.get(STARTED) == b"16"
        wait_for(lambda: worker.refresh() or worker.get_state() == "busy", what="rq info's busy state")
        assert len(worker.get_current_executions(refresh=True)) == 16
        assert StartedJobRegistry(QUEUE, connection=redis).count == 16

        redis.set(RELEASE, "1")
        wait_for(lambda: redis.get(HELD_DONE) == b"17", what="every job, the 17th included, to run")
        wait_for(lambda: worker.refresh() or worker.get_state() == "idle", what="the worker idle again")
        assert worker.get_current_executions(refresh=True) == []
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0, log_path.read_text()
    finally:
        stopped(process)


# -- RQ parity -----------------------------------------------------------------------------

# Fields of RQ's job hash whose values are times or ids: their presence is compared, not their value.
TIMES = {"created_at", "enqueued_at", "started_at", "ended_at", "last_heartbeat", "worker_name", "origin"}


def left_behind(redis: Redis, queue_name: str, job_id: str, worker: Any) -> dict[str, Any]:
    fields = {
        key.decode(): value.decode(errors="replace")
        for key, value in redis.hgetall(Job.key_for(job_id)).items()
    }
    worker_fields = {key.decode(): value for key, value in redis.hgetall(worker.key).items()}
    return {
        "job": {key: (key if key in TIMES else value) for key, value in fields.items() if key != "exc_info"},
        "exception": fields.get("exc_info", "").strip().splitlines()[-1:],
        "started": job_id in StartedJobRegistry(queue_name, connection=redis).get_job_ids(),
        "failed": job_id in FailedJobRegistry(queue_name, connection=redis).get_job_ids(),
        "finished": job_id in FinishedJobRegistry(queue_name, connection=redis).get_job_ids(),
        "counters": {k: worker_fields.get(k) for k in ("successful_job_count", "failed_job_count")},
    }


class RQsSimpleWorker(SimpleWorker):
    """RQ's SimpleWorker, leaving its pub/sub at once as ours does (else its own unsubscribe waits
    up to 60 s, and the worker hash, read after it, has expired)."""

    unsubscribe = ConcurrentWorker.unsubscribe


def run_one(redis: Redis, redis_url: str, worker_class: type, func: str, result_ttl: int) -> dict[str, Any]:
    name = f"parity-{worker_class.__name__}"
    jobs = Queue(name, connection=redis)
    job = jobs.enqueue(f"{HERE}.{func}", redis_url, result_ttl=result_ttl, job_timeout=1)
    extra = {"concurrency": 2, "turn_host": TurnHost()} if worker_class is ConcurrentWorker else {}
    worker = worker_class([jobs], connection=redis, **extra)
    worker.work(burst=True)
    return left_behind(redis, name, job.id, worker)


@pytest.mark.parametrize("result_ttl", [0, 500])
@pytest.mark.parametrize(
    "func",
    ["mark_done", "mark_done_async", "fails", "fails_async", "overruns", "overruns_async"],
)
def test_the_worker_leaves_in_redis_what_rqs_simple_worker_leaves(
    redis: Redis, redis_url: str, func: str, result_ttl: int
) -> None:
    ours = run_one(redis, redis_url, ConcurrentWorker, func, result_ttl)
    rqs = run_one(redis, redis_url, RQsSimpleWorker, func, result_ttl)
    if func == "mark_done_async" and result_ttl:  # only Job.perform stores a coroutine's result
        ours["job"].pop("result", None), rqs["job"].pop("result", None)
    assert ours == rqs


class Monitored(threading.Thread):
    """The commands Redis runs, as MONITOR reports them, until `end()`."""

    END = "tests:monitor-end"

    def __init__(self, redis: Redis) -> None:
        super().__init__(daemon=True)
        self.redis = redis
        self.commands: list[str] = []
        self.listening = threading.Event()

    def run(self) -> None:
        with self.redis.monitor() as monitor:
            self.listening.set()
            for seen in monitor.listen():
                if self.END in seen["command"]:
                    return
                self.commands.append(seen["command"])

    def end(self) -> list[str]:
        self.redis.echo(self.END)
        self.join(timeout=10)
        return self.commands


def test_a_worker_running_many_jobs_beats_in_the_round_trips_it_makes_anyway(
    redis: Redis, redis_url: str
) -> None:
    jobs = Queue("beats", connection=redis)
    for _ in range(40):
        jobs.enqueue(f"{HERE}.mark_done", redis_url, result_ttl=0)
    worker = ConcurrentWorker([jobs], connection=redis, concurrency=8, turn_host=TurnHost())
    monitored = Monitored(redis)
    monitored.start()
    monitored.listening.wait(timeout=10)
    worker.work(burst=True)
    beats = [c for c in monitored.end() if c.startswith(f"HSET {worker.key} last_heartbeat")]
    assert redis.get(DONE) == b"40"
    # Each job: a beat in RQ's pipeline that starts it and in its suspension check's, and three
    # more of their own round trip (before and after the dequeue, after the job), which the
    # worker sends at most every HEARTBEAT_S.
    assert len(beats) <= 2 * 40 + 3, len(beats)


# -- stopping ------------------------------------------------------------------------------


def test_a_warm_stop_ends_work_once_the_running_job_has_ended(
    redis: Redis, redis_url: str, tmp_path: Path
) -> None:
    queue(redis, QUEUE).enqueue(f"{HERE}.held", redis_url, result_ttl=0)
    process, log_path = start_worker(tmp_path, redis_url, 2)
    try:
        wait_for(lambda: redis.get(STARTED) == b"1", what="the job to start")
        process.send_signal(signal.SIGTERM)
        wait_for(lambda: "stopping (SIGTERM)" in log_path.read_text(), what="the stop to be heard")
        # Taken in the dequeue round the stop came in, or left queued; never dropped.
        queue(redis, QUEUE).enqueue(f"{HERE}.mark_done", redis_url, result_ttl=0)
        assert process.poll() is None, "the worker left before its job ended"
        redis.set(RELEASE, "1")
        assert process.wait(timeout=20) == 0, log_path.read_text()
        assert redis.get(HELD_DONE) == b"1", "the running job never ended"
        assert int(redis.get(DONE) or 0) + queue(redis, QUEUE).count == 1
        assert "stopping: True" in log_path.read_text()
        assert registered(redis) == [], "the worker did not leave RQ's registry"
    finally:
        stopped(process)


def test_a_second_sigterm_is_the_crash_path(redis: Redis, redis_url: str, tmp_path: Path) -> None:
    queue(redis, QUEUE).enqueue(f"{HERE}.held", redis_url, result_ttl=0)
    process, log_path = start_worker(tmp_path, redis_url, 2)
    try:
        wait_for(lambda: redis.get(STARTED) == b"1", what="the job to start")
        process.send_signal(signal.SIGTERM)
        wait_for(lambda: "stopping (SIGTERM)" in log_path.read_text(), what="the stop to be heard")
        process.send_signal(signal.SIGTERM)  # a supervisor's and its process group's: one stop
        second = time.monotonic() + 1.5
        wait_for(lambda: time.monotonic() > second, what="a second, later SIGTERM")
        assert process.poll() is None, "two copies of one SIGTERM were taken for a cold stop"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) != 0
        assert "cold stop" in log_path.read_text()
        assert redis.get(HELD_DONE) is None, "the job ran to its end"
    finally:
        stopped(process)


@pytest.mark.parametrize(("func", "left"), [("mark_done", b"1"), ("a_turn_starting", b"handed back")])
def test_a_job_taken_as_the_stop_comes_still_runs(
    redis: Redis, redis_url: str, tmp_path: Path, func: str, left: bytes
) -> None:
    """Dropped there, a delivery job left its `delivery_queued` flag behind, and every later
    delivery of that thread was skipped as already queued: a deploy silenced the thread. A turn
    that starts then hears the drain at once and hands itself back."""
    jobs = queue(redis, QUEUE)
    jobs.enqueue(f"{HERE}.{func}", redis_url, result_ttl=0)
    process, log_path = start_worker(tmp_path, redis_url, 2, "stop-after-pop")
    try:
        assert process.wait(timeout=20) == 0, log_path.read_text()
        assert redis.get(DONE) == left
        assert jobs.count == 0
    finally:
        stopped(process)


# -- logs ------------------------------------------------------------------------------------


def run_one_job_logged(
    redis: Redis, redis_url: str, caplog: pytest.LogCaptureFixture, level: str, queue_name: str
) -> list[tuple[str, str, str]]:
    queue(redis, queue_name).enqueue(
        f"{HERE}.mark_done", redis_url, result_ttl=0
    )  # as every threadline job is
    jobs = queue(redis, queue_name)
    worker = ConcurrentWorker(
        [jobs], connection=redis, serializer=jobs.serializer, concurrency=2, turn_host=TurnHost()
    )
    rq_log = logging.getLogger("rq.worker")
    before = rq_log.level
    rq_log.setLevel(rq_worker_level(level))
    try:
        with caplog.at_level(level):
            worker.work(burst=True)
    finally:
        rq_log.setLevel(before)
    assert redis.get(DONE) == b"1"
    return [(line.name, line.getMessage(), line.levelname) for line in caplog.records]


@pytest.mark.parametrize(("queue_name", "taken_shown"), [(TURNS_QUEUE, True), (SLACK_QUEUE, False)])
def test_at_info_the_worker_says_which_turn_it_took_and_rq_says_nothing_per_job(
    redis: Redis, redis_url: str, caplog: pytest.LogCaptureFixture, queue_name: str, taken_shown: bool
) -> None:
    said = run_one_job_logged(redis, redis_url, caplog, "INFO", queue_name)
    assert not [message for name, message, _ in said if name.startswith("rq.")]
    took = [message for _, message, level in said if " took " in message and level == "INFO"]
    assert bool(took) is taken_shown
    if taken_shown:
        assert took == [f"worker {took[0].split()[1]} took {HERE}.mark_done from turns"]


def test_at_debug_rqs_per_job_lines_and_the_taken_line_are_there(
    redis: Redis, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    said = run_one_job_logged(redis, redis_url, caplog, "DEBUG", SLACK_QUEUE)
    completed = [
        level for name, message, level in said if name == "rq.worker" and "Successfully completed" in message
    ]
    assert completed == ["INFO"]  # RQ's own level: its logger lets it through only under DEBUG
    assert [level for _, message, level in said if " took " in message] == ["DEBUG"]
    assert not [message for _, message, _ in said if "discarded" in message]


def test_a_stopping_worker_leaves_its_pubsub_at_once(redis: Redis) -> None:
    """RQ reads its channel in a thread that waits up to 60 s for a message; redis-py 8.2's
    `PubSubWorkerThread.stop()`, which RQ's unsubscribe calls before its own bounded join, waits
    for that thread without a limit: a worker took up to a minute to exit after SIGTERM."""
    jobs = queue(redis, SLACK_QUEUE)
    worker = ConcurrentWorker(
        [jobs], connection=redis, serializer=jobs.serializer, concurrency=2, turn_host=TurnHost()
    )
    worker.subscribe()
    wait_for(lambda: worker.pubsub.subscribed, what="the subscription")
    # The state RQ's thread is in most of its life: nothing subscribed any more, waiting for it.
    worker.pubsub.unsubscribe()
    wait_for(lambda: not worker.pubsub.subscribed, what="the thread to read the unsubscription")
    leaving = threading.Thread(target=worker.unsubscribe, daemon=True)
    leaving.start()
    leaving.join(timeout=10)
    assert not leaving.is_alive(), "unsubscribe still waiting for RQ's thread"
