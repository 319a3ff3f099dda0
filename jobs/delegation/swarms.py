"""An AgentSwarm call: its items, how many run at once, and their answers in item order.

The swarm's items live in one hash under the parent (`swarm:<call id>`): each item's spec,
the shared fork seed (stored once, not once per item), each item's outcome and a counter;
a list holds the items not started yet. At most `concurrency` items run at once: the
launcher starts the first ones, and each item that ends starts the next. The item that
completes the count aggregates the answers into the call's one result.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import cast

from pydantic import TypeAdapter
from redis import Redis
from redis.typing import EncodableT, FieldT

from agent.delegation.launcher import ChildSpec, SpawnRefused, SwarmRequest
from agent.delegation.results import ChildOutcome, swarm_result
from agent.messages import Message
from agent.tools.base import ToolResult
from jobs.delegation.spawning import Lineage, launch_child, plan_child
from jobs.delegation.waits import StepWaits
from jobs.keys import SwarmField, swarm_key, swarm_next_key
from jobs.lua import lua
from jobs.redis_text import text_map
from jobs.session.store import SessionStore

_MESSAGES = TypeAdapter(list[Message])
SWARM_TTL_S = 7 * 24 * 3600  # a swarm whose parent was stopped leaves nothing behind for longer

# -1: this item's outcome was already recorded; otherwise how many items have ended.
_ITEM_DONE = f"""
if redis.call('HSETNX', KEYS[1], '{SwarmField.RESULT}' .. ARGV[1], ARGV[2]) == 0 then return -1 end
return redis.call('HINCRBY', KEYS[1], '{SwarmField.DONE}', 1)
"""


class Swarm:
    def __init__(self, parent: SessionStore, call_id: str) -> None:
        self.parent = parent
        self.call_id = call_id
        self.key = swarm_key(parent.key, call_id)
        self.next_key = swarm_next_key(parent.key, call_id)

    @property
    def redis(self) -> Redis:
        return self.parent.redis

    def create(self, request: SwarmRequest) -> None:
        seed = request.children[0].seed if request.children else ()
        fields: dict[FieldT, EncodableT] = {
            SwarmField.DESCRIPTION: request.description,
            SwarmField.TOTAL: str(len(request.children)),
            SwarmField.LABELS: json.dumps(request.labels),
            SwarmField.SEED: json.dumps([m.model_dump(mode="json", exclude_none=True) for m in seed]),
        }
        for index, child in enumerate(request.children):
            fields[f"{SwarmField.SPEC}{index}"] = json.dumps({**asdict(child), "seed": None})
        pipe = self.redis.pipeline(transaction=True)
        pipe.delete(self.key, self.next_key)
        pipe.hset(self.key, mapping=fields)
        pipe.rpush(self.next_key, *range(len(request.children)))
        pipe.expire(self.key, SWARM_TTL_S)
        pipe.expire(self.next_key, SWARM_TTL_S)
        pipe.execute()

    def start_next(self, turn_timeout_s: int) -> bool:
        """Start the next item not started yet; False when none is left."""
        raw = cast(bytes | None, self.redis.lpop(self.next_key))  # without a count: one item or None
        if raw is None:
            return False
        index = int(raw)
        spec = self._spec(index)
        parent = Lineage.of(self.parent)
        try:
            planned = plan_child(self.redis, parent, spec, self.call_id, index)
        except SpawnRefused as refused:  # a resumed agent that got busy since the call
            self.item_ended(
                index, ChildOutcome("failed", spec.description, error=str(refused)), turn_timeout_s
            )
            return True
        launch_child(
            self.redis, parent, planned, spec, call_id=self.call_id, mode="swarm", item=index,
            turn_timeout_s=turn_timeout_s,
        )  # fmt: skip
        return True

    def item_ended(self, index: int, outcome: ChildOutcome, turn_timeout_s: int) -> None:
        """Record an item's outcome and start the next item; the last one answers the call.

        Once nobody waits for the call (the parent was stopped), no further item starts.
        """
        waits = StepWaits(self.parent)
        if not waits.is_pending(self.call_id):
            self.clear()
            return
        done = lua(self.redis, _ITEM_DONE)(keys=[self.key], args=[index, json.dumps(asdict(outcome))])
        if done == -1:
            return
        self.start_next(turn_timeout_s)
        if int(done) >= int(self.redis.hget(self.key, SwarmField.TOTAL) or 0):
            waits.complete(self.call_id, self.result(), turn_timeout_s=turn_timeout_s)
            self.clear()

    def result(self) -> ToolResult:
        fields = text_map(self.redis.hgetall(self.key))
        total = int(fields[SwarmField.TOTAL])
        outcomes = [ChildOutcome(**json.loads(fields[f"{SwarmField.RESULT}{i}"])) for i in range(total)]
        return swarm_result(fields[SwarmField.DESCRIPTION], json.loads(fields[SwarmField.LABELS]), outcomes)

    def clear(self) -> None:
        self.redis.delete(self.key, self.next_key)

    def _spec(self, index: int) -> ChildSpec:
        raw = json.loads(self.redis.hget(self.key, f"{SwarmField.SPEC}{index}") or b"{}")
        seed = _MESSAGES.validate_json(self.redis.hget(self.key, SwarmField.SEED) or b"[]")
        return ChildSpec(**{**raw, "seed": seed})
