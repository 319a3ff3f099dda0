"""Acknowledging means replicated (issue 32): `web` waits for replicas to hold a request's writes.

WAIT counts the writes of the connection it runs on, and a request's writes went out on whichever
pooled connections its calls took (a script on one, RQ's enqueue on another). So the mark is
written on the WAIT's own connection, just before it: Redis replicates one stream in order, so a
replica that holds the mark holds every write made before it, whichever connection made them.
"""

from __future__ import annotations

import time

from redis import Redis

from jobs.keys import REPLICATION_MARK


def replicas_holding(redis: Redis, wanted: int, timeout_ms: int) -> int:
    """How many replicas hold every write made so far, waiting up to `timeout_ms` for `wanted`."""
    with redis.pipeline(transaction=False) as pipe:
        pipe.set(REPLICATION_MARK, int(time.time() * 1000))
        pipe.wait(wanted, timeout_ms)
        _, held = pipe.execute()
    return int(held)
