"""What RQ holds, read through RQ's own API (tests/test_rq_surface.py: no `rq:` key by hand)."""

from __future__ import annotations

from redis import Redis
from rq import Worker
from rq.registry import ScheduledJobRegistry

from jobs.queues import SLACK_QUEUE, TURNS_QUEUE, queue


def waiting(redis: Redis, name: str = TURNS_QUEUE) -> int:
    """Jobs waiting on the queue `name` (turns by default)."""
    return queue(redis, name).count


def waiting_deliveries(redis: Redis) -> int:
    return waiting(redis, SLACK_QUEUE)


def scheduled(redis: Redis, name: str = TURNS_QUEUE) -> int:
    """Jobs of `name` waiting for their time (enqueue_at)."""
    return ScheduledJobRegistry(queue=queue(redis, name)).count


def workers(redis: Redis) -> int:
    """RQ workers registered (alive, or not yet expired)."""
    return Worker.count(connection=redis)


def take_a_turn_job(redis: Redis) -> str | None:
    """Pop the next turn job's id off its queue, as a worker that then dies would."""
    return queue(redis, TURNS_QUEUE).pop_job_id()
