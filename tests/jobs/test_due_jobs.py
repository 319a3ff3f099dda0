"""Due `enqueue_at` jobs are moved to their queue once, however many workers release them."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

from redis import Redis

from jobs.due_jobs import release_due_jobs
from jobs.queues import SLACK_QUEUE, queue


def _at(seconds_from_now: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds_from_now)


def test_a_due_job_is_queued_and_a_future_one_waits(redis: Redis) -> None:
    slack = queue(redis, SLACK_QUEUE)
    due = slack.enqueue_at(_at(-5), "builtins.print", "due")
    later = slack.enqueue_at(_at(3600), "builtins.print", "later")

    assert release_due_jobs(redis, slack) == 1

    assert slack.job_ids == [due.id]
    assert slack.scheduled_job_registry.get_job_ids() == [later.id]
    assert release_due_jobs(redis, slack) == 0
    assert slack.job_ids == [due.id]


def test_a_job_becomes_due_when_its_time_comes(redis: Redis) -> None:
    slack = queue(redis, SLACK_QUEUE)
    job = slack.enqueue_at(_at(60), "builtins.print", "soon")

    assert release_due_jobs(redis, slack, now=time.time()) == 0
    assert release_due_jobs(redis, slack, now=time.time() + 61) == 1
    assert slack.job_ids == [job.id]


def test_workers_releasing_at_once_queue_each_job_exactly_once(redis: Redis) -> None:
    slack = queue(redis, SLACK_QUEUE)
    scheduled = {slack.enqueue_at(_at(-1), "builtins.print", index).id for index in range(300)}
    start = threading.Barrier(4)

    def release() -> None:
        mine = Redis(connection_pool=redis.connection_pool)
        start.wait()
        while release_due_jobs(mine, queue(mine, SLACK_QUEUE)):
            pass

    workers = [threading.Thread(target=release) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)

    queued = slack.job_ids
    assert sorted(queued) == sorted(scheduled)
    assert len(queued) == len(set(queued)) == 300
    assert slack.scheduled_job_registry.count == 0
