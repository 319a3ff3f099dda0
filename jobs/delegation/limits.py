"""Quotas on sub-agents (settings `QUOTA_SUBAGENTS_*`, `QUOTA_SWARM_ITEMS_PER_CALL`).

Depth is bounded in the core (MAX_AGENT_DEPTH); without these, one prompt could still fan
out to a swarm of 128 at each level. Checked before anything starts; a refusal is a
`SpawnRefused`, which the tool returns to the model as its error result.

- Items per swarm call: the call's own size.
- Started per turn: a counter per turn of the calling session (`spawned:<turn id>`), so a
  parked step that resumes in another job still counts what its turn started; a swarm counts
  all its items, since every one of them starts within the turn.
- Alive per root: sub-agents of the whole tree that are queued, running or parked, read
  from the root's `subagents` set when a call asks; a swarm adds the items it runs at once.
  Calls of one batch start in parallel, so each first takes a ticket (`INCRBY` on the root's
  `starting` counter) and counts those still starting ahead of it too; it gives the ticket
  back once its children are queued (and so counted as alive). In a race this can refuse a
  call that would just have fitted, never let one pass the limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import cast

from redis import Redis

from agent.delegation import texts
from agent.delegation.launcher import SpawnRefused
from jobs.keys import MetaField, SessionKey, meta_key, spawned_key, starting_key, subagents_key
from jobs.session.store import SessionStore
from jobs.settings import Settings

LIVE_STATES = frozenset({b"queued", b"running", b"awaiting_approval", b"awaiting_agents"})
STARTING_TTL_S = 60  # a ticket a crashed worker never gave back stops counting after this
SPAWNED_TTL_S = 24 * 3600  # longer than any turn (TURN_TIMEOUT_SECONDS, 1 h) and its parked waits


@dataclass(frozen=True)
class SubagentLimits:
    alive_per_root: int
    per_turn: int
    swarm_items: int

    @classmethod
    def of(cls, settings: Settings) -> SubagentLimits:
        return cls(
            settings.QUOTA_SUBAGENTS_ALIVE_PER_ROOT,
            settings.QUOTA_SUBAGENTS_PER_TURN,
            settings.QUOTA_SWARM_ITEMS_PER_CALL,
        )


def check_swarm_size(limits: SubagentLimits, items: int) -> None:
    if items > limits.swarm_items:
        raise SpawnRefused(texts.swarm_too_big(limits.swarm_items, items))


@contextmanager
def alive_room(redis: Redis, limits: SubagentLimits, root: SessionKey, adding: int) -> Iterator[None]:
    """Room for `adding` more live sub-agents in the tree while the block starts them, or refuse."""
    key = starting_key(root)
    pending = _add(redis, key, adding, STARTING_TTL_S)  # this call's and those started before it
    try:
        if alive_under(redis, root) + pending > limits.alive_per_root:
            raise SpawnRefused(texts.too_many_alive(limits.alive_per_root))
        yield
    finally:
        redis.decrby(key, adding)


def count_started(store: SessionStore, limits: SubagentLimits, starting: int) -> None:
    """Count `starting` against this turn's limit, or refuse (and count nothing)."""
    turn_id = store.meta.read().turn_id or "none"
    key = spawned_key(store.key, turn_id)
    started = _add(store.redis, key, starting, SPAWNED_TTL_S)
    if started > limits.per_turn:
        store.redis.decrby(key, starting)
        raise SpawnRefused(texts.too_many_this_turn(limits.per_turn, started - starting))


def _add(redis: Redis, key: str, amount: int, ttl_s: int) -> int:
    pipe = redis.pipeline(transaction=True)
    pipe.incrby(key, amount)
    pipe.expire(key, ttl_s)
    return int(pipe.execute()[0])


def alive_under(redis: Redis, root: SessionKey) -> int:
    """Sub-agents of the tree that are queued, running or parked."""
    members = cast(set[bytes], redis.smembers(subagents_key(root)))
    if not members:
        return 0
    pipe = redis.pipeline(transaction=False)
    for member in members:
        pipe.hget(meta_key(SessionKey.parse(member.decode())), MetaField.STATE)
    return sum(1 for state in pipe.execute() if state in LIVE_STATES)
