"""Deliveries that must happen later: a throttled card edit, a status refresh, a sweep after a
lock expires, a retry after Slack's Retry-After. RQ's scheduler runs them; a flag per purpose
keeps one pending timer of each kind per thread."""

from __future__ import annotations

from datetime import timedelta

from redis import Redis

from jobs.keys import SessionKey
from jobs.queues import DELIVERY_JOB, DELIVERY_TIMEOUT_S, SLACK_QUEUE, queue

SCHEDULER_SLACK_S = 1.0  # RQ's scheduler looks for due jobs once a second


def deliver_later(redis: Redis, key: SessionKey, purpose: str, seconds: float) -> bool:
    """Schedule a delivery of `key` in `seconds` unless one for `purpose` is already pending."""
    delay_ms = max(1, int(seconds * 1000))
    flag = key.redis_key(f"timer:{purpose}")
    if not redis.set(flag, "1", nx=True, px=delay_ms + int(SCHEDULER_SLACK_S * 1000)):
        return False
    queue(redis, SLACK_QUEUE).enqueue_in(
        timedelta(milliseconds=delay_ms),
        DELIVERY_JOB,
        str(key),
        job_timeout=DELIVERY_TIMEOUT_S,
        result_ttl=0,
        failure_ttl=7 * 24 * 3600,
    )
    return True
