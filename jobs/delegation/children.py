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
from typing import Literal

from redis import Redis

from agent.delegation.launcher import ChildSpec
from agent.messages import Message, Origin, TextPart
from agent.wire import AppendMessage
from jobs.keys import SessionKey
from jobs.queues import schedule_turn
from jobs.session.state import set_state
from jobs.session.store import SessionStore

Mode = Literal["foreground", "swarm", "background"]
_UNSAFE = re.compile(r"[^A-Za-z0-9_.]")
META_PREFIX = "sub_"


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
        fields = {
            "parent": str(self.parent),
            "root": str(self.root),
            "depth": str(self.depth),
            "agent_id": self.agent_id,
            "call_id": self.call_id,
            "mode": self.mode,
            "description": self.description,
            "profile": self.profile,
            "item": "" if self.item is None else str(self.item),
        }
        return {META_PREFIX + name: value for name, value in fields.items()}

    @classmethod
    def from_meta(cls, meta: dict[str, str]) -> ChildInfo | None:
        if META_PREFIX + "parent" not in meta:
            return None
        get = lambda name: meta.get(META_PREFIX + name, "")  # noqa: E731
        return cls(
            parent=SessionKey.parse(get("parent")),
            root=SessionKey.parse(get("root")),
            depth=int(get("depth") or 1),
            agent_id=get("agent_id"),
            call_id=get("call_id"),
            mode=get("mode"),  # type: ignore[arg-type]
            description=get("description"),
            profile=get("profile"),
            item=int(get("item")) if get("item") else None,
        )


def child_info(store: SessionStore) -> ChildInfo | None:
    """The session's place under its parent; None for a session people started in Slack."""
    return ChildInfo.from_meta(store.meta()) if store.key.is_subagent else None


def children_key(parent: SessionKey) -> str:
    return parent.redis_key("children")


def active_children(redis: Redis, parent: SessionKey) -> list[SessionKey]:
    return [SessionKey.parse(raw) for raw in sorted(m.decode() for m in redis.smembers(children_key(parent)))]


def task_message(spec: ChildSpec, info: ChildInfo) -> Message:
    """The sub-agent's task, as the user input of its session."""
    origin = Origin(kind="user", trigger="agent", parent=str(info.parent), tool_call_id=info.call_id)
    return Message(role="user", content=[TextPart(text=spec.prompt)], origin=origin)


def create_child(redis: Redis, info: ChildInfo, spec: ChildSpec, key: SessionKey) -> SessionStore:
    """Write the child's session (meta, inherited history, task) without starting it."""
    store = SessionStore(redis, key)
    store.touch()
    store.set_meta(**info.to_meta())
    for index, message in enumerate(spec.seed):
        # The parent's wire ids mean nothing in the child's log; the child's own ids replace them.
        store.append(AppendMessage(message=message.model_copy(update={"id": None})), once_key=f"seed:{index}")
    give_task(store, info, spec)
    return store


def give_task(store: SessionStore, info: ChildInfo, spec: ChildSpec) -> None:
    store.set_meta(**info.to_meta())
    store.append(AppendMessage(message=task_message(spec, info)), once_key=f"task:{info.call_id}")
    store.redis.sadd(children_key(info.parent), str(store.key))


def start(store: SessionStore, turn_timeout_s: int) -> None:
    if schedule_turn(store.redis, store.key, turn_timeout_s=turn_timeout_s):
        set_state(store, "queued")


def finished(redis: Redis, info: ChildInfo, key: SessionKey) -> None:
    forget_child(redis, info.parent, key)


def forget_child(redis: Redis, parent: SessionKey, child: SessionKey) -> None:
    redis.srem(children_key(parent), str(child))
