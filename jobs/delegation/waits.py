"""A parent's step parked on its sub-agents: which calls wait, their results, who goes on.

One hash per session: a field per waiting call (`pending`, then the result's JSON) plus
`~step` and `~armed`. The Agent tool registers its call (`expect`) before the child starts.
The loop arms the wait when its batch is done (`wait`, `arm`): if every result is already in, it
goes on in the same worker; otherwise the step parks. A child finishing records its result
(`complete`); when the wait is armed and nothing is pending any more, that child enqueues the
parent's continuation. Both are Lua scripts, so exactly one of them sees "armed and complete"
first (the other sees it too; enqueueing twice is harmless, the queued flag and the lease
make one continuation run).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from agent.messages import ToolCall
from agent.offload import in_thread
from agent.tools import texts
from agent.tools.base import ToolResult
from agent.wire import AppendLoopEvent, StepEnd, ToolResultEvent, ToolResultPayload
from jobs.keys import WAIT_ARMED_FIELD, WAIT_STEP_FIELD, waits_key
from jobs.lua import lua
from jobs.queues import schedule_turn
from jobs.redis_text import text, text_map
from jobs.session.store import SessionStore

PENDING = "pending"
_MARKERS = (WAIT_STEP_FIELD, WAIT_ARMED_FIELD)

# A new step's first call replaces what an earlier, finished step left behind.
_EXPECT = f"""
if redis.call('HGET', KEYS[1], '{WAIT_ARMED_FIELD}') == '1' then redis.call('DEL', KEYS[1]) end
redis.call('HSET', KEYS[1], ARGV[1], '{PENDING}')
"""

_ARM = f"""
redis.call('HSET', KEYS[1], '{WAIT_ARMED_FIELD}', '1', '{WAIT_STEP_FIELD}', ARGV[1])
for i = 2, #ARGV do
  local value = redis.call('HGET', KEYS[1], ARGV[i])
  if not value or value == '{PENDING}' then return 0 end
end
return 1
"""

# -1: nobody waits for this call (cancelled, or already settled); 0: recorded, others pending
# or not armed yet; 1: recorded and this completes an armed wait.
_COMPLETE = f"""
local value = redis.call('HGET', KEYS[1], ARGV[1])
if value ~= '{PENDING}' then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if redis.call('HGET', KEYS[1], '{WAIT_ARMED_FIELD}') ~= '1' then return 0 end
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  if fields[i + 1] == '{PENDING}' then return 0 end
end
return 1
"""


def encode_result(result: ToolResult) -> str:
    return json.dumps({"output": result.text(), "is_error": result.is_error})


def decode_result(raw: str) -> ToolResult:
    data = json.loads(raw)
    return ToolResult(data["output"], is_error=bool(data.get("is_error")))


@dataclass(frozen=True)
class ParkedWait:
    step_uuid: str
    results: dict[str, ToolResult] | None  # None while some call still waits


class StepWaits:
    """The loop's `DeferredResults` on Redis, and the jobs' view of the same wait."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.key = waits_key(store.key)

    def expect(self, tool_call_id: str) -> None:
        lua(self.store.redis, _EXPECT)(keys=[self.key], args=[tool_call_id])

    async def wait(self, step_uuid: str, calls: list[ToolCall]) -> dict[str, ToolResult] | None:
        """The loop's port (agent.loop.ports.DeferredResults): `arm`, off the event loop."""
        return await in_thread(self.arm, step_uuid, calls)

    def arm(self, step_uuid: str, calls: list[ToolCall]) -> dict[str, ToolResult] | None:
        """Arm the wait for `calls`: their results when all are in, else None (the step parks)."""
        ids = [call.id for call in calls]
        if not lua(self.store.redis, _ARM)(keys=[self.key], args=[step_uuid, *ids]):
            return None
        return self.results(ids)

    def complete(self, tool_call_id: str, result: ToolResult, *, turn_timeout_s: int) -> bool:
        """Record a result; when that completes an armed wait, enqueue the parent's continuation."""
        outcome = lua(self.store.redis, _COMPLETE)(
            keys=[self.key], args=[tool_call_id, encode_result(result)]
        )
        if outcome != 1:
            return False
        schedule_turn(self.store.redis, self.store.key, turn_timeout_s=turn_timeout_s)
        return True

    def results(self, ids: list[str] | None = None) -> dict[str, ToolResult]:
        fields = self._fields()
        wanted = ids if ids is not None else [name for name in fields if name not in _MARKERS]
        return {call_id: decode_result(fields[call_id]) for call_id in wanted}

    def parked(self) -> ParkedWait | None:
        """The armed wait, if a step is parked on sub-agents."""
        fields = self._fields()
        if fields.get(WAIT_ARMED_FIELD) != "1":
            return None
        calls = {name: value for name, value in fields.items() if name not in _MARKERS}
        done = all(value != PENDING for value in calls.values())
        results = {name: decode_result(value) for name, value in calls.items()} if done else None
        return ParkedWait(fields[WAIT_STEP_FIELD], results)

    def ready(self) -> bool:
        parked = self.parked()
        return parked is not None and parked.results is not None

    def is_pending(self, tool_call_id: str) -> bool:
        value = self.store.redis.hget(self.key, tool_call_id)
        return value is not None and text(value) == PENDING

    def pending_calls(self) -> list[str]:
        return [name for name, value in self._fields().items() if value == PENDING]

    def clear(self) -> None:
        self.store.redis.delete(self.key)

    def settle_cancelled(self, pending: list[ToolCall], reason: str) -> None:
        """Close a parked step whose sub-agents were stopped: the user-cancelled text for each."""
        step = self.parked()
        self.clear()
        if step is None:
            return
        for call in pending:
            payload = ToolResultPayload(output=texts.aborted(call.name, "user_cancelled"), is_error=True)
            self.store.append(
                AppendLoopEvent(event=ToolResultEvent(tool_call_id=call.id, result=payload)),
                once_key=f"{step.step_uuid}:result:{call.id}",
            )
        end = StepEnd(uuid=step.step_uuid, finish_reason=reason)
        self.store.append(AppendLoopEvent(event=end), once_key=f"{step.step_uuid}:end")

    def _fields(self) -> dict[str, str]:
        return text_map(self.store.redis.hgetall(self.key))
