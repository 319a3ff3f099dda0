"""Deliveries that must happen later: a throttled card edit, a status refresh, a sweep after a
lock expires, a retry after Slack's Retry-After, a watchdog for a run that may die. They are
RQ `enqueue_at` jobs that every worker releases when due (jobs.due_jobs); a flag per purpose
keeps one pending timer of each kind per thread."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

from redis import Redis

from jobs.keys import SessionKey, timer_key
from jobs.queues import DELIVERY_JOB, DELIVERY_TIMEOUT_S, SLACK_QUEUE, queue


def deliver_later(redis: Redis, key: SessionKey, purpose: str, seconds: float) -> bool:
    """Schedule a delivery of `key` in `seconds` unless one for `purpose` is already pending."""
    # RQ keeps scheduled times in whole seconds (truncated), so a job could be released up to
    # a second early; rounding up makes "later" never mean "sooner".
    due = math.ceil(time.time() + max(seconds, 0.001))
    flag = timer_key(key, purpose)
    if not redis.set(flag, "1", nx=True, px=max(1, int((due - time.time()) * 1000))):
        return False
    queue(redis, SLACK_QUEUE).enqueue_at(
        datetime.fromtimestamp(due, UTC),
        DELIVERY_JOB,
        str(key),
        job_timeout=DELIVERY_TIMEOUT_S,
        result_ttl=0,
        failure_ttl=7 * 24 * 3600,
    )
    return True
