"""When each session tree was last touched: the retention sweep's index (jobs.retention).

`tl:sessions` is a sorted set of root sessions scored by the ms of the last state change of the
root or of any sub-agent under it, so the sweep reads the oldest first instead of scanning the
keyspace. Every state change in Python goes through `MetaHash.set_state`, which notes it here in
the same round trip. The intake script (jobs/input.lua) also writes `updated` without noting it;
the sweep reads `updated` again before it removes anything, so the index may lag but never makes a
session look older than it is.

Sessions written before the index existed, or whose note was lost, are found by `catch_up`: a
SCAN over meta hashes that goes on a few steps per sweep from where the last one stopped.
"""

from __future__ import annotations

import time

from redis import Redis
from redis.client import Pipeline

from jobs.keys import PREFIX, RETENTION_SCAN, SESSION_INDEX, SUBAGENT_SEPARATOR, SessionKey, subagents_key
from jobs.redis_text import text

SCAN_COUNT = 1000  # keys Redis looks at per SCAN call
SCAN_CALLS_PER_SWEEP = 20  # 20,000 keys a sweep: a keyspace of millions is covered within a day


def root_of(key: SessionKey) -> SessionKey:
    """The session people started that `key` is (or is under): its thread's own ts."""
    thread_ts = key.thread_ts.split(SUBAGENT_SEPARATOR, 1)[0]
    return SessionKey(team=key.team, channel=key.channel, thread_ts=thread_ts)


def note_touched(pipe: Pipeline, key: SessionKey, ms: int) -> None:
    """Queue on `pipe`: the tree of `key` was touched at `ms` (never moves its time back)."""
    root = root_of(key)
    pipe.zadd(SESSION_INDEX, {str(root): ms}, gt=True)  # GT still adds a root it does not have
    if key != root:
        pipe.sadd(subagents_key(root), str(key))


def catch_up(redis: Redis, calls: int | None = SCAN_CALLS_PER_SWEEP) -> None:
    """Index sessions whose meta hash the index has not seen; `calls` SCAN steps (None: all)."""
    cursor = int(text(redis.get(RETENTION_SCAN) or b"0"))
    for _ in range(calls if calls is not None else 1 << 62):
        cursor, found = redis.scan(cursor, match=f"{PREFIX}:{{*}}:meta", count=SCAN_COUNT)
        _note_found(redis, [text(name) for name in found])
        if cursor == 0:
            break
    redis.set(RETENTION_SCAN, str(cursor))


def _note_found(redis: Redis, names: list[str]) -> None:
    if not names:
        return
    with redis.pipeline(transaction=False) as reading:
        for name in names:
            reading.hmget(name, ["updated", "created"])
        times = reading.execute()
    with redis.pipeline(transaction=False) as writing:
        for name, stamps in zip(names, times, strict=True):
            key = _session_of(name)
            if key is not None:
                note_touched(writing, key, _touched(stamps))
        writing.execute()


def _session_of(meta_name: str) -> SessionKey | None:
    try:
        return SessionKey.parse(meta_name[len(PREFIX) + 2 : -len("}:meta")])
    except ValueError:  # not a session's meta hash after all
        return None


def _touched(stamps: list[bytes | None]) -> int:
    """`updated`, else `created` (before any state change); with neither, touched now."""
    known = [int(text(each)) for each in stamps if each and text(each).isdigit()]
    return known[0] if known else int(time.time() * 1000)
