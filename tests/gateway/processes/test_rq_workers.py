"""The RQ worker classes threadline runs, each with a real RQ worker on a real Redis.

- They leave RQ's pub/sub promptly when they stop. RQ reads its channel in a thread that waits
  up to 60 s for a message, and stops it with redis-py's `PubSubWorkerThread.stop()`, which waits
  for that thread without a limit: a worker whose thread had gone back to waiting took up to a
  minute to exit after SIGTERM, which a deploy (or a supervisor's drain deadline) does not give it.
- A job taken off the queue as the stop comes still runs.
- What RQ logs about each job (gateway.processes.logs.QuietRqJobLines).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Any

import pytest
from redis import Redis

from gateway.processes.logs import QuietRqJobLines
from gateway.processes.rq_workers import ConcurrentWorker, DrainingSimpleWorker, DrainingWorker
from jobs.queues import SLACK_QUEUE, queue
from tests.polling import wait_for

DEADLINE_S = 10.0  # a deadline for the test, far below the 60 s RQ's thread can wait
DONE_KEY = "tests:rq_workers:done"


def a_worker(worker_class: type, redis: Redis) -> Any:
    """`worker_class` on the slack queue, as `threadline worker` builds it (ConcurrentWorker with
    slots for 2 jobs)."""
    slack = queue(redis, SLACK_QUEUE)
    extra = {"concurrency": 2} if issubclass(worker_class, ConcurrentWorker) else {}
    return worker_class([slack], connection=redis, serializer=slack.serializer, **extra)


@pytest.mark.parametrize("worker_class", [DrainingSimpleWorker, DrainingWorker, ConcurrentWorker])
def test_a_stopping_worker_leaves_its_pubsub_at_once(redis: Redis, worker_class: type) -> None:
    worker = a_worker(worker_class, redis)
    worker.subscribe()
    wait_for(lambda: worker.pubsub.subscribed, what="the subscription")
    # The state RQ's thread is in most of its life: nothing subscribed any more, waiting for it.
    worker.pubsub.unsubscribe()
    wait_for(lambda: not worker.pubsub.subscribed, what="the thread to read the unsubscription")

    leaving = threading.Thread(target=worker.unsubscribe, daemon=True)
    leaving.start()
    leaving.join(timeout=DEADLINE_S)
    assert not leaving.is_alive(), f"{worker_class.__name__}.unsubscribe still waiting for RQ's thread"


def mark_done() -> None:
    """The job: leaves a mark that it ran."""
    from rq import get_current_job

    job = get_current_job()
    assert job is not None
    job.connection.set(DONE_KEY, "1")


def stopped_right_after_taking_a_job(worker_class: type) -> type:
    """`worker_class`, to which SIGTERM (a deploy) comes the moment a job has been taken off the
    queue, before it runs."""

    class Stopped(worker_class):  # type: ignore[valid-type, misc]
        def reorder_queues(self, reference_queue: Any) -> None:  # RQ calls it just after the pop
            super().reorder_queues(reference_queue)
            os.kill(os.getpid(), signal.SIGTERM)

    return Stopped


@pytest.mark.parametrize("worker_class", [ConcurrentWorker, DrainingWorker])
def test_a_job_taken_as_the_worker_is_told_to_stop_still_runs(redis: Redis, worker_class: type) -> None:
    """Dropped there, a delivery job left its `delivery_queued` flag behind, and every later
    delivery of that thread was skipped as already queued: a deploy silenced the thread. The
    forking class runs the job in a work horse, which hands a turn back at once (it was forked
    with the stop already requested)."""
    slack = queue(redis, SLACK_QUEUE)
    slack.enqueue(mark_done)
    worker = a_worker(stopped_right_after_taking_a_job(worker_class), redis)
    worker.work()
    assert redis.get(DONE_KEY) == b"1"
    assert slack.count == 0 and worker.get_state() != "busy"


def run_one_job_logged(
    redis: Redis, caplog: pytest.LogCaptureFixture, worker_class: type, level: str, quiet: logging.Filter
) -> list[tuple[str, str]]:
    """RQ's lines (message, level) for one job run by `worker_class`, its `rq.worker` logger at
    `level` (as LOG_LEVEL sets it, gateway.processes.logs) with `quiet`."""
    queue(redis, SLACK_QUEUE).enqueue(mark_done, result_ttl=0)  # as every threadline job is (jobs.queues)
    worker = a_worker(worker_class, redis)
    rq_log = logging.getLogger("rq.worker")
    rq_log.addFilter(quiet)
    try:
        with caplog.at_level(level, logger="rq.worker"):
            worker.work(burst=True)
            if isinstance(worker, ConcurrentWorker):  # its job ends in a thread of its own
                wait_for(lambda: worker.running_jobs() == 0, what="the job's thread to end")
    finally:
        rq_log.removeFilter(quiet)
    assert redis.get(DONE_KEY) == b"1"
    return [(line.getMessage(), line.levelname) for line in caplog.records if line.name == "rq.worker"]


@pytest.mark.parametrize("worker_class", [DrainingSimpleWorker, ConcurrentWorker])
def test_a_finished_job_logs_no_line_about_its_discarded_result(
    redis: Redis, worker_class: type, caplog: pytest.LogCaptureFixture
) -> None:
    said = [line for line, _ in run_one_job_logged(redis, caplog, worker_class, "INFO", logging.Filter())]
    assert any("Successfully completed" in line for line in said)
    assert not [line for line in said if "discarded" in line]


@pytest.mark.parametrize(("quiet_taken", "taken_shown"), [(False, True), (True, False)])
def test_at_info_rq_says_which_job_it_took_but_not_that_each_finished(
    redis: Redis, caplog: pytest.LogCaptureFixture, quiet_taken: bool, taken_shown: bool
) -> None:
    said = run_one_job_logged(
        redis, caplog, DrainingSimpleWorker, "INFO", QuietRqJobLines(quiet_taken=quiet_taken)
    )
    assert not [line for line, _ in said if "Successfully completed" in line or "Job OK" in line]
    assert any("mark_done" in line for line, _ in said) is taken_shown  # delivery: not even that
    assert any("started with PID" in line for line, _ in said)  # the worker's own lines stay


def test_at_debug_rqs_per_job_lines_are_there_as_debug(
    redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    said = dict(
        run_one_job_logged(redis, caplog, DrainingSimpleWorker, "DEBUG", QuietRqJobLines(quiet_taken=True))
    )
    completed = [level for line, level in said.items() if "Successfully completed" in line]
    assert completed == ["DEBUG"]
