"""Tool calls parked for a person's approval, kept in Redis so a restart loses nothing.

One hash per session maps approval id → the request (JSON); a second maps approval id → its
state. Deciding is one Lua script that only moves `pending` on, so a second click is a no-op.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, ConfigDict

from jobs.keys import approval_deciders_key, approval_states_key, approvals_key
from jobs.lua import lua
from jobs.redis_text import text, text_map
from jobs.session.store import SessionStore

DEFAULT_APPROVAL_TIMEOUT_S = 24 * 3600  # APPROVAL_TIMEOUT_SECONDS: a parked call is denied after this

Decision = Literal["approved", "denied", "cancelled", "expired"]

_DECIDE = """
if redis.call('HGET', KEYS[1], ARGV[1]) ~= 'pending' then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1
"""


def waited_text(seconds: float) -> str:
    """How long a call waited for approval, as a person says it: "24 h", "30 min", "90 s"."""
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)} {unit}"
    return f"{seconds:g} s"


class Approval(BaseModel):
    model_config = ConfigDict(frozen=True)

    approval_id: str
    tool_call_id: str
    tool_name: str
    summary: str
    details: str | None = None  # the call's full arguments, for the card a person approves from
    reason: str | None = None
    step_uuid: str
    turn_id: str | None = None
    asked_at: float | None = None  # epoch seconds it was parked; absent on requests parked before

    def waited_s(self) -> float | None:
        """How long it has waited for a decision (None when its asking time is not known)."""
        return None if self.asked_at is None else time.time() - self.asked_at


class ApprovalStore:
    def __init__(self, store: SessionStore) -> None:
        self.redis = store.redis
        self.requests_key = approvals_key(store.key)
        self.states_key = approval_states_key(store.key)
        self.deciders_key = approval_deciders_key(store.key)

    def park(self, approvals: list[Approval]) -> None:
        pipe = self.redis.pipeline(transaction=True)
        for approval in approvals:
            pipe.hset(self.requests_key, approval.approval_id, approval.model_dump_json())
            pipe.hset(self.states_key, approval.approval_id, "pending")
        pipe.execute()

    def requests(self) -> list[Approval]:
        return [Approval.model_validate_json(raw) for raw in self.redis.hvals(self.requests_key)]

    def get(self, approval_id: str) -> Approval | None:
        raw = self.redis.hget(self.requests_key, approval_id)
        return Approval.model_validate_json(raw) if raw else None

    def state(self, approval_id: str) -> str | None:
        value = self.redis.hget(self.states_key, approval_id)
        return text(value) if value else None

    def states(self) -> dict[str, str]:
        return text_map(self.redis.hgetall(self.states_key))

    def decide(self, approval_id: str, decision: Decision, by: str) -> bool:
        """True when this call decided it; False when it was already decided (or unknown)."""
        script = lua(self.redis, _DECIDE)
        return bool(script(keys=[self.states_key, self.deciders_key], args=[approval_id, decision, by]))

    def decided_by(self, approval_id: str) -> str | None:
        value = self.redis.hget(self.deciders_key, approval_id)
        return text(value) if value else None

    def pending(self) -> list[Approval]:
        states = self.states()
        return [a for a in self.requests() if states.get(a.approval_id) == "pending"]

    def clear(self) -> None:
        self.redis.delete(self.requests_key, self.states_key, self.deciders_key)
