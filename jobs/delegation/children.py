"""A sub-agent is a session of its own: its own wire log, lease and turn jobs, no Slack thread.

Its key is its parent's with `-<agent id>` appended to the thread_ts (so it can never be a
Slack thread), its workspace is its root session's, and its meta hash says whose child it is
and how its answer goes back: `foreground` (the parent's parked tool call), `swarm` (one item
of a parent's AgentSwarm call) or `background` (a message to the parent). The parent keeps the
set of its children still working, which is what a cancel walks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, cast

from redis import Redis

from agent.delegation.launcher import ChildSpec
from agent.messages import Message, Origin, TextPart
from agent.wire import AppendMessage
from jobs.keys import MetaField, SessionKey, children_key
from jobs.queues import queue_turn
from jobs.redis_text import text
from jobs.session.meta import SessionMeta
from jobs.session.store import SessionStore

Mode = Literal["foreground", "swarm", "background"]
_UNSAFE = re.compile(r"[^A-Za-z0-9_.]")


def agent_id_for(tool_call_id: str, item: int | None = None) -> str:
    """A sub-agent's id: its tool call's id made key-safe, with the item index for a swarm."""
    base = _UNSAFE.sub("_", tool_call_id)[:64] or "call"
    return base if item is None else f"{base}.{item}"


@dataclass(frozen=True)
class ChildInfo:
    parent: SessionKey
    root: SessionKey  # whose workspace (and Slack thread) the whole tree shares
    depth: int
    agent_id: str
    call_id: str
    mode: Mode
    description: str
    profile: str
    item: int | None = None

    def to_meta(self) -> dict[str, str]:
        """The sub-agent fields of the session's meta hash (MetaHash.set_lineage)."""
        return {
            MetaField.SUB_PARENT: str(self.parent),
            MetaField.SUB_ROOT: str(self.root),
            MetaField.SUB_DEPTH: str(self.depth),
            MetaField.SUB_AGENT_ID: self.agent_id,
            MetaField.SUB_CALL_ID: self.call_id,
            MetaField.SUB_MODE: self.mode,
            MetaField.SUB_DESCRIPTION: self.description,
            MetaField.SUB_PROFILE: self.profile,
            MetaField.SUB_ITEM: "" if self.item is None else str(self.item),
        }

    @classmethod
    def from_meta(cls, meta: SessionMeta) -> ChildInfo | None:
        if meta.sub_parent is None:
            return None
        return cls(
            parent=SessionKey.parse(meta.sub_parent),
            root=SessionKey.parse(meta.sub_root or ""),
            depth=int(meta.sub_depth or 1),
            agent_id=meta.sub_agent_id or "",
            call_id=meta.sub_call_id or "",
            mode=cast(Mode, meta.sub_mode or ""),  # written from a Mode by to_meta
            description=meta.sub_description or "",
            profile=meta.sub_profile or "",
            item=int(meta.sub_item) if meta.sub_item else None,
        )


def child_info(store: SessionStore) -> ChildInfo | None:
    """The session's place under its parent; None for a session people started in Slack."""
    return ChildInfo.from_meta(store.meta.read()) if store.key.is_subagent else None


def active_children(redis: Redis, parent: SessionKey) -> list[SessionKey]:
    return [SessionKey.parse(raw) for raw in sorted(text(m) for m in redis.smembers(children_key(parent)))]


def task_message(spec: ChildSpec, info: ChildInfo) -> Message:
    """The sub-agent's task, as the user input of its session."""
    # Origin keeps kind-specific fields as pydantic extras, which only validation accepts.
    origin = Origin.model_validate(
        {"kind": "user", "trigger": "agent", "parent": str(info.parent), "tool_call_id": info.call_id}
    )
    return Message(role="user", content=[TextPart(text=spec.prompt)], origin=origin)


def create_child(redis: Redis, info: ChildInfo, spec: ChildSpec, key: SessionKey) -> SessionStore:
    """Write the child's session (meta, inherited history, task) without starting it."""
    store = SessionStore(redis, key)
    store.touch()
    store.meta.set_lineage(info.to_meta())
    for index, message in enumerate(spec.seed):
        # The parent's wire ids mean nothing in the child's log; the child's own ids replace them.
        store.append(AppendMessage(message=message.model_copy(update={"id": None})), once_key=f"seed:{index}")
    give_task(store, info, spec)
    return store


def give_task(store: SessionStore, info: ChildInfo, spec: ChildSpec) -> None:
    store.meta.set_lineage(info.to_meta())
    store.append(AppendMessage(message=task_message(spec, info)), once_key=f"task:{info.call_id}")
    store.redis.sadd(children_key(info.parent), str(store.key))


def start(store: SessionStore, turn_timeout_s: int) -> None:
    queue_turn(store, turn_timeout_s=turn_timeout_s)


def finished(redis: Redis, info: ChildInfo, key: SessionKey) -> None:
    forget_child(redis, info.parent, key)


def forget_child(redis: Redis, parent: SessionKey, child: SessionKey) -> None:
    redis.srem(children_key(parent), str(child))
