"""What `threadline status` shows, read from Redis alone: sessions by state, the RQ workers alive
and what each runs, the queues, the oldest input still waiting.

Nothing here writes. Sessions are found through the retention index (`tl:sessions`, roots
scored by their last change) and the sub-agent sets under each root, so a status costs a few
pipelined round trips however large the keyspace, never a SCAN. Ages are whole seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import UTC, datetime

from pydantic import BaseModel
from redis import Redis
from rq import Queue, Worker
from rq.job import Job
from rq.registry import FailedJobRegistry, ScheduledJobRegistry, StartedJobRegistry

from jobs.keys import (
    QUEUED_SESSIONS,
    RUNNING_SESSIONS,
    SESSION_INDEX,
    SessionKey,
    inbox_key,
    meta_key,
    subagents_key,
    usage_key,
)
from jobs.queues import SERIALIZER, SLACK_QUEUE, TURNS_QUEUE, queue
from jobs.redis_text import text
from jobs.session.meta import SessionMeta, State
from jobs.session.user_input import UserInput
from jobs.usage import Totals

WINDOW_S = 7 * 24 * 3600  # sessions changed this recently are listed; older ones are idle history
MAX_ROOTS = 2000  # the newest roots read per status: bounded even when a team has thousands
SHOWN_STATES: tuple[State, ...] = (
    "running",
    "queued",
    "awaiting_approval",
    "awaiting_agents",
    "interrupted",
    "failed",
)


class SessionRow(BaseModel):
    key: str
    state: State
    owner: str | None
    age_s: int | None  # since its state last changed
    turn_id: str | None
    worker: str | None  # the RQ worker running its turn, when one is
    waiting_inputs: int
    usage: Totals  # the model usage of its turns so far (a root's includes its sub-agents')


class RunningJob(BaseModel):
    job_id: str
    queue: str
    session: str | None
    since_s: int | None


class WorkerRow(BaseModel):
    name: str
    hostname: str | None
    pid: int | None
    state: str
    queues: list[str]
    heartbeat_age_s: int | None
    up_s: int | None
    running: list[RunningJob]


class QueueRow(BaseModel):
    name: str
    waiting: int
    oldest_s: int | None
    running: int
    scheduled: int
    failed: int


class WaitingInput(BaseModel):
    session: str
    age_s: int
    where: str  # "inbox" (a turn runs and will take it) or "queued" (its turn has not started)


class Overview(BaseModel):
    at: str
    sessions: list[SessionRow]
    idle_or_done: int
    workers: list[WorkerRow]
    queues: list[QueueRow]
    oldest_waiting_input: WaitingInput | None


def overview(redis: Redis) -> Overview:
    now = time.time()
    metas = _recent_sessions(redis, now)
    held = _running_by_worker(redis, now)
    sessions = _session_rows(redis, metas, held, now)
    return Overview(
        at=datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds"),
        sessions=sorted(sessions, key=lambda row: (SHOWN_STATES.index(row.state), -(row.age_s or 0))),
        idle_or_done=len(metas) - len(sessions),
        workers=_worker_rows(redis, held, now),
        queues=[_queue_row(queue(redis, name), now) for name in (TURNS_QUEUE, SLACK_QUEUE)],
        oldest_waiting_input=_oldest_waiting(redis, sessions, now),
    )


def _recent_sessions(redis: Redis, now: float) -> dict[SessionKey, SessionMeta]:
    since_ms = int((now - WINDOW_S) * 1000)
    found: list[bytes] = redis.zrevrangebyscore(SESSION_INDEX, "+inf", since_ms, 0, MAX_ROOTS)  # type: ignore[assignment]  # no scores asked for: names only
    # The intake script queues a new session without indexing it: the queued and running sets
    # name those (their sub-agents are under roots the index has).
    working: set[bytes] = redis.sunion([QUEUED_SESSIONS, RUNNING_SESSIONS])  # type: ignore[assignment]  # a set, not an awaitable
    roots = list(dict.fromkeys([*(text(name) for name in found), *sorted(text(name) for name in working)]))
    with redis.pipeline(transaction=False) as pipe:
        for root in roots:
            pipe.smembers(subagents_key(SessionKey.parse(root)))
        children = pipe.execute()
    keys = [SessionKey.parse(name) for name in roots]
    keys += [SessionKey.parse(text(child)) for found in children for child in sorted(found)]
    return dict(zip(keys, _metas(redis, keys), strict=True))


def _metas(redis: Redis, keys: list[SessionKey]) -> list[SessionMeta]:
    with redis.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.hgetall(meta_key(key))
        found = pipe.execute()
    return [SessionMeta.model_validate({text(k): text(v) for k, v in raw.items()}) for raw in found]


def _session_rows(
    redis: Redis, metas: dict[SessionKey, SessionMeta], held: dict[str, list[RunningJob]], now: float
) -> list[SessionRow]:
    shown = {key: meta for key, meta in metas.items() if meta.state in SHOWN_STATES}
    workers = {job.job_id: worker for worker, jobs in held.items() for job in jobs}
    with redis.pipeline(transaction=False) as pipe:
        for key in shown:
            pipe.llen(inbox_key(key))
            pipe.hgetall(usage_key(key))
        read = pipe.execute()
    waiting, usages = read[0::2], read[1::2]
    return [
        SessionRow(
            key=str(key),
            state=meta.state,
            owner=meta.owner,
            age_s=_age_ms(meta.updated, now),
            turn_id=meta.turn_id,
            worker=workers.get(meta.job or ""),
            waiting_inputs=int(count),
            usage=Totals.from_hash(usage),
        )
        for (key, meta), count, usage in zip(shown.items(), waiting, usages, strict=True)
    ]


def _running_by_worker(redis: Redis, now: float) -> dict[str, list[RunningJob]]:
    """The started jobs of both queues, grouped by the worker RQ says took each one (one fetch
    of the jobs serves the session rows and the worker rows)."""
    held: dict[str, list[RunningJob]] = {}
    for name in (TURNS_QUEUE, SLACK_QUEUE):
        registry = StartedJobRegistry(name, connection=redis, serializer=SERIALIZER)
        ids = [job_id for job_id, _ in registry.get_job_and_execution_ids()]
        for job in _jobs(redis, ids):
            if not job.worker_name:
                continue
            session = str(job.args[0]) if job.args else None
            row = RunningJob(job_id=job.id, queue=name, session=session, since_s=_age_s(job.started_at, now))
            held.setdefault(job.worker_name, []).append(row)
    return held


def _worker_rows(redis: Redis, held: dict[str, list[RunningJob]], now: float) -> list[WorkerRow]:
    return [
        WorkerRow(
            name=worker.name,
            hostname=worker.hostname,
            pid=worker.pid,
            state=str(worker.get_state()),
            queues=worker.queue_names(),
            heartbeat_age_s=_age_s(worker.last_heartbeat, now),
            up_s=_age_s(worker.birth_date, now),
            running=held.get(worker.name, []),
        )
        for worker in sorted(Worker.all(connection=redis), key=lambda w: w.name)
    ]


def _queue_row(handle: Queue, now: float) -> QueueRow:
    first = handle.get_job_ids(0, 1)  # offset, length
    oldest = _jobs(handle.connection, first)
    return QueueRow(
        name=handle.name,
        waiting=handle.count,
        oldest_s=_age_s(oldest[0].enqueued_at, now) if oldest else None,
        running=StartedJobRegistry(queue=handle).count,
        scheduled=ScheduledJobRegistry(queue=handle).count,  # type: ignore[no-untyped-call]  # rq leaves its __init__ unannotated
        failed=FailedJobRegistry(queue=handle).count,
    )


def _oldest_waiting(redis: Redis, sessions: list[SessionRow], now: float) -> WaitingInput | None:
    candidates = [
        WaitingInput(session=row.key, age_s=row.age_s, where="queued")
        for row in sessions
        if row.state == "queued" and row.age_s is not None
    ]
    candidates += _inbox_heads(redis, [row.key for row in sessions if row.waiting_inputs], now)
    return max(candidates, key=lambda found: found.age_s, default=None)


def _inbox_heads(redis: Redis, keys: list[str], now: float) -> list[WaitingInput]:
    with redis.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.lindex(inbox_key(SessionKey.parse(key)), 0)
        heads = pipe.execute()
    found = []
    for key, head in zip(keys, heads, strict=True):
        if head:
            sent_at = _slack_seconds(UserInput.model_validate_json(head).ts, now)
            found.append(WaitingInput(session=key, age_s=max(0, int(now - sent_at)), where="inbox"))
    return found


def _jobs(redis: Redis, ids: Iterable[str]) -> list[Job]:
    fetched = Job.fetch_many(list(ids), connection=redis, serializer=SERIALIZER)
    return [job for job in fetched if job is not None]


def _age_ms(ms: int | None, now: float) -> int | None:
    return None if ms is None else max(0, int(now - ms / 1000))


def _age_s(moment: datetime | None, now: float) -> int | None:
    if moment is None:
        return None
    stamp = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return max(0, int(now - stamp.timestamp()))


def _slack_seconds(ts: str, default: float) -> float:
    try:
        return float(ts)
    except ValueError:  # not a Slack ts (an input made by threadline itself)
        return default
