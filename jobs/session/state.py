"""A session's lifecycle state (docs/architecture.md, "Session states"), kept in its meta hash.

idle → queued → running → idle on success; running → awaiting_approval (worker freed);
running → cancelled; running → interrupted (worker died); running → failed. Resume moves
cancelled / interrupted / failed back to queued; new input in the thread does the same.
running → awaiting_agents: the turn's step waits for its sub-agents (worker freed); the last
sub-agent to answer enqueues the continuation.
"""

from __future__ import annotations

from redis import Redis

from jobs.keys import SessionKey, recent_session_key
from jobs.redis_text import text
from jobs.session.meta import MetaHash, State
from jobs.session.store import SessionStore, now_ms

STOPPED_STATES: frozenset[str] = frozenset({"cancelled", "interrupted", "failed"})
PARKED_STATES: frozenset[str] = frozenset({"awaiting_approval", "awaiting_agents"})  # no worker held
WORKING_STATES: frozenset[str] = frozenset({"queued", "running"}) | PARKED_STATES  # a turn not ended
RECENT_TTL_S = 30 * 24 * 3600  # `/agent cancel` without a link finds sessions this recent


def state_of(store: SessionStore) -> State:
    return store.meta.read().state


def set_state(
    store: SessionStore,
    state: State,
    *,
    last_turn_reason: str | None = None,
    turn_id: str | None = None,
    job: str | None = None,
) -> None:
    store.meta.set_state(state, now_ms(), last_turn_reason=last_turn_reason, turn_id=turn_id, job=job)


def session_exists(redis: Redis, key: SessionKey) -> bool:
    return MetaHash(redis, key).exists()


def latest_session(redis: Redis, team: str, channel: str, user: str) -> SessionKey | None:
    value = redis.get(recent_session_key(team, channel, user))
    return SessionKey.parse(text(value)) if value else None
