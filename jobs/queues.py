"""Placing jobs: the `turns` and `slack` queues and the once-per-session scheduling rule."""

from __future__ import annotations

import math
import time
import uuid
from datetime import UTC, datetime

from redis import Redis
from rq import Queue
from rq.exceptions import DuplicateJobError
from rq.serializers import JSONSerializer

from jobs.keys import QUEUED_SESSIONS, SessionKey, delivery_queued_key, turn_queued_key
from jobs.lua import lua
from jobs.redis_text import text
from jobs.session.state import set_state, state_of
from jobs.session.store import SessionStore

TURNS_QUEUE = "turns"
SLACK_QUEUE = "slack"
TURN_JOB = "jobs.turn.runner.run_turn"
DELIVERY_JOB = "gateway.delivery.job.deliver"  # by name: jobs never imports gateway
COMPACTION_JOB = "jobs.compaction_job.run_manual_compaction"
APPROVAL_EXPIRY_JOB = "jobs.control.expire_approvals"
TURN_TIMEOUT_GRACE_S = 120  # RQ's own timeout is a backstop: the loop stops itself at the turn's limit
QUEUED_FLAG_TTL_S = 6 * 3600  # a lost job cannot block its session for longer than this
# The session's delivery flag, set for the job to come unless one is queued: then that job's id.
_CLAIM_DELIVERY = """
local held = redis.call('GET', KEYS[1])
if held then return held end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return false
"""
DELIVERY_TIMEOUT_S = 600  # posting a long answer through 429s can take minutes, not hours
FAILURE_TTL_S = 7 * 24 * 3600  # a failed job stays a week for inspection
SERIALIZER = JSONSerializer  # job arguments are plain strings; never unpickle from Redis


_queues: dict[tuple[int, str], Queue] = {}


def queue(redis: Redis, name: str) -> Queue:
    """The named queue on `redis`; one handle per client, since building one costs more than a job."""
    cache_key = (id(redis), name)  # the handle keeps its client alive, so the id stays its own
    handle = _queues.get(cache_key)
    if handle is None:
        handle = _queues[cache_key] = Queue(name, connection=redis, serializer=SERIALIZER)
    return handle


def schedule_turn(redis: Redis, key: SessionKey, *, turn_timeout_s: int) -> bool:
    """Enqueue a turn unless one is already queued for this session.

    The `queued` flag is set atomically (SET NX) and cleared by the job when it starts, so two
    messages arriving together enqueue one job; the job id carries the flag's token, so a
    retried enqueue of the same intent is refused by RQ itself. A duplicate that slipped
    through anyway is harmless: it finds the session's lease taken, or nothing to answer.
    """
    token = new_turn_token()
    if not redis.set(turn_queued_key(key), token, nx=True, ex=QUEUED_FLAG_TTL_S):
        return False
    if not enqueue_turn(redis, key, token, turn_timeout_s=turn_timeout_s):
        return False
    redis.sadd(QUEUED_SESSIONS, str(key))  # jobs/input.lua adds its claims itself
    return True


def queue_turn(store: SessionStore, *, turn_timeout_s: int) -> bool:
    """Mark a session that runs no turn `queued`, then enqueue its turn (`schedule_turn`).

    In this order: a worker may take the job at once and mark the session running, and a
    `queued` written after that makes the running turn look queued, so a cancel would take it
    for one not started yet and never reach it. An enqueue that fails puts the state back."""
    before = state_of(store)
    set_state(store, "queued")
    try:
        return schedule_turn(store.redis, store.key, turn_timeout_s=turn_timeout_s)
    except Exception:
        set_state(store, before)
        raise


def new_turn_token() -> str:
    return uuid.uuid4().hex[:12]


def enqueue_turn(redis: Redis, key: SessionKey, token: str, *, turn_timeout_s: int) -> bool:
    """Enqueue the turn whose `queued` flag holds `token`, through RQ's public API; False when its
    job is already there. On failure the flag goes, and the error is raised."""
    try:
        queue(redis, TURNS_QUEUE).enqueue(
            TURN_JOB,
            str(key),
            job_id=turn_job_id(token),
            unique=True,
            job_timeout=turn_timeout_s + TURN_TIMEOUT_GRACE_S,
            result_ttl=0,
            failure_ttl=FAILURE_TTL_S,
        )
    except DuplicateJobError:
        return False
    except Exception:
        redis.delete(turn_queued_key(key))  # let the next attempt enqueue
        raise
    return True


def schedule_approval_expiry(redis: Redis, key: SessionKey, step_uuid: str, after_s: float) -> None:
    """Deny the calls parked at `step_uuid` that are still undecided in `after_s` (a job kept
    in Redis, so restarts of every worker and of Redis keep the deadline)."""
    queue(redis, TURNS_QUEUE).enqueue_at(
        datetime.fromtimestamp(math.ceil(time.time() + after_s), UTC),
        APPROVAL_EXPIRY_JOB,
        str(key),
        step_uuid,
        after_s,
        result_ttl=0,
        failure_ttl=7 * 24 * 3600,
    )


def turn_job_waiting(redis: Redis, key: SessionKey) -> bool:
    """Whether the session's queued turn job is still on the `turns` queue, not yet taken."""
    token = redis.get(turn_queued_key(key))
    if token is None:
        return False
    return redis.lpos(queue(redis, TURNS_QUEUE).key, turn_job_id(text(token))) is not None


def turn_job_id(token: str) -> str:
    return f"turn-{token}"


def clear_turn_flag(redis: Redis, key: SessionKey) -> None:
    redis.delete(turn_queued_key(key))


def schedule_delivery(redis: Redis, key: SessionKey) -> bool:
    """Enqueue a delivery unless one is queued and not yet started (it will drain this notice too).

    The delivery job calls `delivery_started` before it reads the outbox, so a notice posted
    after that point always schedules a new job. The flag holds its job's id, and is trusted
    only while that job is still on the queue. One taken off it may be in the hands of a worker
    that dies before the job begins (nothing runs it then, and RQ's own clean-up only fails it a
    minute later), and one RQ started (or failed) that never took the flag died first, in a crash
    or a Redis failover: either way a new job is queued. When the worker that took it is alive,
    the second job costs one pass that finds the first one's lock or nothing left. A sub-agent's
    session has no thread: its notices stay in its outbox, and what people should see reaches
    its root's thread instead.
    """
    if key.is_subagent:
        return False
    slack = queue(redis, SLACK_QUEUE)
    job_id = f"deliver-{uuid.uuid4().hex}"
    flag = delivery_queued_key(key)
    held = lua(redis, _CLAIM_DELIVERY)(keys=[flag], args=[job_id, QUEUED_FLAG_TTL_S])
    if held:
        if slack.get_job_position(text(held)) is not None:
            return False  # still to be taken: it reads the outbox after this notice
        redis.set(flag, job_id, ex=QUEUED_FLAG_TTL_S)
    try:
        slack.enqueue(
            DELIVERY_JOB,
            str(key),
            job_id=job_id,
            job_timeout=DELIVERY_TIMEOUT_S,
            result_ttl=0,
            failure_ttl=FAILURE_TTL_S,
        )
    except Exception:
        redis.delete(flag)
        raise
    return True


def delivery_started(redis: Redis, key: SessionKey) -> None:
    redis.delete(delivery_queued_key(key))
