"""One input per Slack message, however often Slack delivers it.

Slack redelivers an event it thinks was not acknowledged (`X-Slack-Retry-Num`, same
`event_id`), and an @mention inside a thread arrives twice: as `app_mention` and as `message`,
with different event ids but the same channel and ts. A delivery is new only when none of its
keys was seen; the keys are claimed with `SET NX EX` in one round trip.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from redis import Redis

from jobs.keys import event_dedupe_key, message_dedupe_key
from jobs.lua import delete_if_holds

DEDUPE_TTL_S = 3600  # Slack gives up redelivering well within an hour; a twin arrives within seconds


@dataclass(frozen=True)
class Claim:
    """The keys this delivery claimed; `fresh` is False when any of them was already taken."""

    fresh: bool
    taken: tuple[str, ...]
    token: str


def delivery_keys(team: str, event_id: str | None, channel: str | None, ts: str | None) -> list[str]:
    keys = []
    if event_id:
        keys.append(event_dedupe_key(team, event_id))
    if channel and ts:
        keys.append(message_dedupe_key(team, channel, ts))
    return keys


def claim(redis: Redis, keys: list[str]) -> Claim:
    token = uuid.uuid4().hex
    pipe = redis.pipeline(transaction=False)
    for key in keys:
        pipe.set(key, token, nx=True, ex=DEDUPE_TTL_S)
    results = pipe.execute()
    taken = tuple(key for key, ok in zip(keys, results, strict=True) if ok)
    return Claim(fresh=len(taken) == len(keys), taken=taken, token=token)


def release(redis: Redis, claimed: Claim) -> None:
    """Give the keys back when the input could not be recorded, so Slack's retry is not dropped."""
    for key in claimed.taken:
        delete_if_holds(redis, key, claimed.token)
