"""Every RQ worker class threadline runs leaves RQ's pub/sub promptly when it stops.

RQ reads its pub/sub channel in a thread that waits up to 60 s for a message, and stops it with
redis-py's `PubSubWorkerThread.stop()`, which waits for that thread without a limit: a worker
whose thread had gone back to waiting took up to a minute to exit after SIGTERM, which a deploy
(or a supervisor's drain deadline) does not give it."""

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


@pytest.mark.parametrize("worker_class", [DrainingSimpleWorker, DrainingWorker, ConcurrentWorker])
def test_a_stopping_worker_leaves_its_pubsub_at_once(redis: Redis, worker_class: type) -> None:
    extra = {"concurrency": 2} if worker_class is ConcurrentWorker else {}
    worker = worker_class([queue(redis, SLACK_QUEUE)], connection=redis, **extra)
    worker.subscribe()
    wait_for(lambda: worker.pubsub.subscribed, what="the subscription")
    # The state RQ's thread is in most of its life: nothing subscribed any more, waiting for it.
    worker.pubsub.unsubscribe()
    wait_for(lambda: not worker.pubsub.subscribed, what="the thread to read the unsubscription")

    leaving = threading.Thread(target=worker.unsubscribe, daemon=True)
    leaving.start()
    leaving.join(timeout=DEADLINE_S)
    assert not leaving.is_alive(), f"{worker_class.__name__}.unsubscribe still waiting for RQ's thread"


DONE_KEY = "tests:rq_workers:done"


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
    extra = {"concurrency": 2} if worker_class is ConcurrentWorker else {}
    worker = stopped_right_after_taking_a_job(worker_class)(
        [slack], connection=redis, serializer=slack.serializer, **extra
    )
    worker.work()
    assert redis.get(DONE_KEY) == b"1"
    assert slack.count == 0 and worker.get_state() != "busy"


@pytest.mark.parametrize("worker_class", [DrainingSimpleWorker, ConcurrentWorker])
def test_a_finished_job_logs_no_line_about_its_discarded_result(
    redis: Redis, worker_class: type, caplog: pytest.LogCaptureFixture
) -> None:
    slack = queue(redis, SLACK_QUEUE)
    slack.enqueue(mark_done, result_ttl=0)  # as every threadline job is (jobs.queues)
    extra = {"concurrency": 2} if worker_class is ConcurrentWorker else {}
    worker = worker_class([slack], connection=redis, serializer=slack.serializer, **extra)
    with caplog.at_level("INFO", logger="rq.worker"):
        worker.work(burst=True)
        if isinstance(worker, ConcurrentWorker):  # its job ends in a thread of its own
            wait_for(lambda: worker.running_jobs() == 0, what="the job's thread to end")
    said = [record.getMessage() for record in caplog.records]
    assert redis.get(DONE_KEY) == b"1" and any("Successfully completed" in line for line in said)
    assert not [line for line in said if "discarded" in line]


def run_one_job_logged(redis: Redis, caplog: pytest.LogCaptureFixture, quiet: logging.Filter, level: str):
    """RQ's lines (message, level) for one job run by a worker whose `rq.worker` logger has `quiet`."""
    slack = queue(redis, SLACK_QUEUE)
    slack.enqueue(mark_done, result_ttl=0)
    worker = DrainingSimpleWorker([slack], connection=redis, serializer=slack.serializer)
    rq_log = logging.getLogger("rq.worker")
    rq_log.addFilter(quiet)
    try:
        with caplog.at_level(level, logger="rq.worker"):  # as LOG_LEVEL sets it (gateway.processes.logs)
            worker.work(burst=True)
    finally:
        rq_log.removeFilter(quiet)
    assert redis.get(DONE_KEY) == b"1"
    return [
        (record.getMessage(), record.levelname) for record in caplog.records if record.name == "rq.worker"
    ]


@pytest.mark.parametrize(("quiet_taken", "taken_shown"), [(False, True), (True, False)])
def test_at_info_rq_says_which_job_it_took_but_not_that_each_finished(
    redis: Redis, caplog: pytest.LogCaptureFixture, quiet_taken: bool, taken_shown: bool
) -> None:
    said = run_one_job_logged(redis, caplog, QuietRqJobLines(quiet_taken=quiet_taken), "INFO")
    assert not [line for line, _ in said if "Successfully completed" in line or "Job OK" in line]
    assert any("mark_done" in line for line, _ in said) is taken_shown  # delivery: not even that
    assert any("started with PID" in line for line, _ in said)  # the worker's own lines stay


def test_at_debug_rqs_per_job_lines_are_there_as_debug(
    redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    said = dict(run_one_job_logged(redis, caplog, QuietRqJobLines(quiet_taken=True), "DEBUG"))
    completed = [level for line, level in said.items() if "Successfully completed" in line]
    assert completed == ["DEBUG"]
