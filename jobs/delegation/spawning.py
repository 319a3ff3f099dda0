"""Starting a sub-agent: a new child session, or more work for an existing one (`resume`)."""

from __future__ import annotations

from dataclasses import dataclass

from redis import Redis

from agent.delegation import texts
from agent.delegation.launcher import ChildSpec, SpawnRefused
from jobs.delegation.children import ChildInfo, Mode, agent_id_for, child_info, create_child, give_task, start
from jobs.keys import SessionKey
from jobs.session.state import session_exists, state_of
from jobs.session.store import SessionStore

BUSY_STATES = frozenset({"queued", "running", "awaiting_approval", "awaiting_agents"})


@dataclass(frozen=True)
class Lineage:
    """Where a session sits in its tree: itself, the root whose workspace it uses, its depth."""

    key: SessionKey
    root: SessionKey
    depth: int

    @classmethod
    def of(cls, store: SessionStore) -> Lineage:
        info = child_info(store)
        if info is None:
            return cls(store.key, store.key, 0)
        return cls(store.key, info.root, info.depth)


@dataclass(frozen=True)
class PlannedChild:
    key: SessionKey
    agent_id: str
    resumed: bool


def plan_child(
    redis: Redis, parent: Lineage, spec: ChildSpec, call_id: str, item: int | None
) -> PlannedChild:
    """Which session the child is; refuses a resume of an unknown or busy sub-agent."""
    if spec.resume is None:
        agent_id = agent_id_for(call_id, item)
        return PlannedChild(parent.key.subagent(agent_id), agent_id, resumed=False)
    try:
        key = parent.key.subagent(spec.resume)
    except ValueError:
        raise SpawnRefused(texts.unknown_agent(spec.resume)) from None
    store = SessionStore(redis, key)
    info = child_info(store) if session_exists(redis, key) else None
    if info is None or info.parent != parent.key:
        raise SpawnRefused(texts.unknown_agent(spec.resume))
    if state_of(store) in BUSY_STATES:
        raise SpawnRefused(texts.agent_busy(spec.resume))
    return PlannedChild(key, spec.resume, resumed=True)


def launch_child(
    redis: Redis,
    parent: Lineage,
    planned: PlannedChild,
    spec: ChildSpec,
    *,
    call_id: str,
    mode: Mode,
    item: int | None = None,
    turn_timeout_s: int,
) -> None:
    info = ChildInfo(
        parent=parent.key,
        root=parent.root,
        depth=parent.depth + 1,
        agent_id=planned.agent_id,
        call_id=call_id,
        mode=mode,
        description=spec.description,
        profile=spec.profile,
        item=item,
    )
    if planned.resumed:
        store = SessionStore(redis, planned.key)
        give_task(store, info, spec)
    else:
        store = create_child(redis, info, spec, planned.key)
    start(store, turn_timeout_s)
