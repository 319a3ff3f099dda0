"""A session's lifecycle state (DESIGN.md "Session states"), kept in its meta hash.

idle → queued → running → idle on success; running → awaiting_approval (worker freed);
running → cancelled; running → interrupted (worker died); running → failed. Resume moves
cancelled / interrupted / failed back to queued; new input in the thread does the same.
running → awaiting_agents: the turn's step waits for its sub-agents (worker freed); the last
sub-agent to answer enqueues the continuation.
"""

from __future__ import annotations

from typing import Literal

from redis import Redis

from jobs.keys import PREFIX, SessionKey
from jobs.session.store import SessionStore, now_ms

State = Literal[
    "idle", "queued", "running", "awaiting_approval", "awaiting_agents", "cancelled", "interrupted", "failed"
]
STOPPED_STATES: frozenset[str] = frozenset({"cancelled", "interrupted", "failed"})
PARKED_STATES: frozenset[str] = frozenset({"awaiting_approval", "awaiting_agents"})  # no worker held
RECENT_TTL_S = 30 * 24 * 3600  # `/agent cancel` without a link finds sessions this recent


def state_of(store: SessionStore) -> State:
    return store.meta().get("state", "idle")  # type: ignore[return-value]


def set_state(store: SessionStore, state: State, **fields: str) -> None:
    store.set_meta(state=state, updated=str(now_ms()), **fields)


def session_exists(redis: Redis, key: SessionKey) -> bool:
    return bool(redis.exists(key.redis_key("meta")))


def latest_session(redis: Redis, team: str, channel: str, user: str) -> SessionKey | None:
    value = redis.get(recent_key(team, channel, user))
    return SessionKey.parse(value.decode()) if value else None


def recent_key(team: str, channel: str, user: str) -> str:
    return f"{PREFIX}:recent:{team}:{channel}:{user}"
