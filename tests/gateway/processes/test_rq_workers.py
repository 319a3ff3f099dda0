"""The RQ worker classes threadline runs, each with a real RQ worker on a real Redis.

- They leave RQ's pub/sub promptly when they stop. RQ reads its channel in a thread that waits
  up to 60 s for a message, and stops it with redis-py's `PubSubWorkerThread.stop()`, which waits
  for that thread without a limit: a worker whose thread had gone back to waiting took up to a
  minute to exit after SIGTERM, which a deploy (or a supervisor's drain deadline) does not give it.
- A job taken off the queue as the stop comes still runs.
- What is logged about each job: the worker's own line that it took one (INFO for a turn), and
  RQ's per-job lines only at LOG_LEVEL=DEBUG (gateway.processes.logs).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Any

import pytest
from redis import Redis

from gateway.processes.logs import rq_worker_level
from gateway.processes.rq_workers import ConcurrentWorker, DrainingSimpleWorker, DrainingWorker
from jobs.queues import SLACK_QUEUE, TURNS_QUEUE, queue
from tests.polling import wait_for

DEADLINE_S = 10.0  # a deadline for the test, far below the 60 s RQ's thread can wait
DONE_KEY = "tests:rq_workers:done"


def a_worker(worker_class: type, redis: Redis, queue_name: str = SLACK_QUEUE) -> Any:
    """`worker_class` on `queue_name` (slack), as `threadline worker` builds it (ConcurrentWorker
    with slots for 2 jobs)."""
    jobs = queue(redis, queue_name)
    extra = {"concurrency": 2} if issubclass(worker_class, ConcurrentWorker) else {}
    return worker_class([jobs], connection=redis, serializer=jobs.serializer, **extra)


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
    redis: Redis,
    caplog: pytest.LogCaptureFixture,
    worker_class: type,
    level: str,
    queue_name: str = SLACK_QUEUE,
) -> list[tuple[str, str, str]]:
    """Every line (logger, message, level) of one job run by `worker_class` from `queue_name`,
    under LOG_LEVEL `level` as gateway.processes.logs sets RQ's worker logger for it."""
    queue(redis, queue_name).enqueue(mark_done, result_ttl=0)  # as every threadline job is (jobs.queues)
    worker = a_worker(worker_class, redis, queue_name)
    rq_log = logging.getLogger("rq.worker")
    before = rq_log.level
    rq_log.setLevel(rq_worker_level(level))
    try:
        with caplog.at_level(level):
            worker.work(burst=True)
            if isinstance(worker, ConcurrentWorker):  # its job ends in a thread of its own
                wait_for(lambda: worker.running_jobs() == 0, what="the job's thread to end")
    finally:
        rq_log.setLevel(before)
    assert redis.get(DONE_KEY) == b"1"
    return [(line.name, line.getMessage(), line.levelname) for line in caplog.records]


@pytest.mark.parametrize("worker_class", [DrainingSimpleWorker, ConcurrentWorker])
def test_a_finished_job_logs_no_line_about_its_discarded_result(
    redis: Redis, worker_class: type, caplog: pytest.LogCaptureFixture
) -> None:
    said = [message for _, message, _ in run_one_job_logged(redis, caplog, worker_class, "DEBUG")]
    assert any("Successfully completed" in message for message in said)
    assert not [message for message in said if "discarded" in message]


@pytest.mark.parametrize(("queue_name", "taken_shown"), [(TURNS_QUEUE, True), (SLACK_QUEUE, False)])
def test_at_info_the_worker_says_which_turn_it_took_and_rq_says_nothing_per_job(
    redis: Redis, caplog: pytest.LogCaptureFixture, queue_name: str, taken_shown: bool
) -> None:
    said = run_one_job_logged(redis, caplog, DrainingSimpleWorker, "INFO", queue_name)
    assert not [message for name, message, _ in said if name.startswith("rq.")]
    took = [message for _, message, level in said if "took" in message and level == "INFO"]
    assert bool(took) is taken_shown
    if taken_shown:
        assert took == [
            f"worker {took[0].split()[1]} took tests.gateway.processes.test_rq_workers.mark_done from turns"
        ]


def test_at_debug_rqs_per_job_lines_and_the_taken_line_are_there(
    redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    said = run_one_job_logged(redis, caplog, DrainingSimpleWorker, "DEBUG")
    completed = [
        level for name, message, level in said if name == "rq.worker" and "Successfully completed" in message
    ]
    assert completed == ["INFO"]  # RQ's own level: its logger lets it through only under DEBUG
    assert [level for _, message, level in said if " took " in message] == ["DEBUG"]
