"""Jobs scheduled for later (`enqueue_at`) moved to their queue when due, by every worker.

RQ's own scheduler runs in one forked process that holds a 61-second lock; when its worker is
killed the lock outlives it, and no other worker schedules anything for up to two minutes
(RQ retries the lock every 120 s). Delivery timers (a throttled card edit, a retry after
Retry-After, a sweep after a lock expires) cannot wait that long, so each worker process
releases due jobs itself, every quarter second. A WATCH on the registry makes two workers
releasing at once enqueue each job once: the second one's transaction fails and retries.
"""

from __future__ import annotations

import time
from typing import cast

from redis import Redis
from redis.exceptions import WatchError
from rq import Queue
from rq.job import Job

TICK_S = 0.25
BATCH = 500


def release_due_jobs(redis: Redis, queue: Queue, now: float | None = None) -> int:
    """Enqueue the jobs of `queue` whose time has come; returns how many."""
    registry = queue.scheduled_job_registry
    until = time.time() if now is None else now
    with redis.pipeline() as pipe:
        while True:
            try:
                pipe.watch(registry.key)  # type: ignore[no-untyped-call]  # redis-py leaves Pipeline.watch unannotated
                members = cast(list[bytes], pipe.zrangebyscore(registry.key, 0, until, 0, BATCH))  # no scores
                due = [member.decode() for member in members]
                if not due:
                    return 0
                jobs = Job.fetch_many(due, connection=redis, serializer=queue.serializer)
                pipe.multi()
                for job in jobs:
                    if job is not None:
                        queue.enqueue_job(job, pipeline=pipe, at_front=job.should_enqueue_at_front())
                pipe.zrem(registry.key, *due)
                pipe.execute()
                return sum(job is not None for job in jobs)
            except WatchError:
                continue
