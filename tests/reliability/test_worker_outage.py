"""Redis goes away in the middle of RQ's work loop: the worker waits for it and works on.

Since the worker beats at most every few seconds (gateway.processes.concurrent_worker), the
outage a job causes mostly lands in RQ's dequeue, which retries on its own, rather than in the
beat after the job, which ended RQ's loop and had `work_through_outages` start a new one; either
way the worker must work on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from redis import Redis
from rq import Queue

from gateway.sandbox.stack import SOURCE_ROOT
from tests.durable_redis import DurableRedis
from tests.polling import wait_for

HERE = "tests.reliability.test_worker_outage"
QUEUE = "outage"
# What `threadline worker` runs for each of its RQ workers, on a queue of the test's own.
WORKER = (
    "import sys; from redis import Redis; from rq import Queue; "
    "from gateway.processes.concurrent_worker import ConcurrentWorker; "
    "from gateway.processes.worker import work_through_outages; "
    "r = Redis.from_url(sys.argv[1]); q = Queue(sys.argv[2], connection=r); "
    "work_through_outages(lambda: ConcurrentWorker([q], connection=r, concurrency=1))"
)


def shut_redis_down(url: str) -> None:
    """A job that takes Redis away, so RQ's own bookkeeping right after it meets the outage."""
    Redis.from_url(url).shutdown(nosave=True)


def note_done(url: str) -> None:
    Redis.from_url(url).set("done after the outage", "yes")


def test_a_worker_whose_loop_meets_an_outage_works_again_once_redis_is_back(tmp_path: Path) -> None:
    server = DurableRedis(tmp_path).start()
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-c", WORKER, server.url, QUEUE], cwd=SOURCE_ROOT, stdout=log, stderr=log
        )
    try:
        Queue(QUEUE, connection=Redis.from_url(server.url)).enqueue(f"{HERE}.shut_redis_down", server.url)
        # Where the outage lands decides who rides it out: RQ's own dequeue retries; any other
        # step ends RQ's loop, and work_through_outages starts a new one once Redis answers.
        wait_for(
            lambda: worker.poll() is not None or "Connection refused" in log_path.read_text(),
            timeout=60,
            what="the worker to meet the outage",
        )
        server.restart()
        redis = Redis.from_url(server.url)
        Queue(QUEUE, connection=redis).enqueue(f"{HERE}.note_done", server.url)

        wait_for(lambda: redis.get("done after the outage"), timeout=60, what="the job after the outage")
        assert worker.poll() is None
        worker.terminate()  # a stop request still stops it
        assert worker.wait(timeout=30) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
        server.stop()


def test_a_worker_started_while_redis_is_away_waits_for_it_and_works(tmp_path: Path) -> None:
    """A worker (re)started during an outage or a failover: RQ names its connection as it is
    made, which used to raise and take the whole `worker` process down."""
    server = DurableRedis(tmp_path).start()
    server.stop()
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-c", WORKER, server.url, QUEUE], cwd=SOURCE_ROOT, stdout=log, stderr=log
        )
    try:
        wait_for(
            lambda: worker.poll() is not None or "waiting for Redis" in log_path.read_text(),
            timeout=60,
            what="the worker to meet the outage",
        )
        assert worker.poll() is None, log_path.read_text()
        server.start()
        redis = Redis.from_url(server.url)
        Queue(QUEUE, connection=redis).enqueue(f"{HERE}.note_done", server.url)
        wait_for(lambda: redis.get("done after the outage"), timeout=60, what="the job once Redis is up")
        assert worker.poll() is None
    finally:
        if worker.poll() is None:
            worker.kill()
        server.stop()
