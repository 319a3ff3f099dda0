"""One session in detail, for `threadline status --thread`: its turns read back from the wire log
(steps, tool calls and what became of each), its approvals, the repairs its history needed and its sub-agents.

A tool call's outcome is what the wire says: `ok` or `error` from its result record, and
`no result` when the log holds the call but no result for it (a turn still running it, or a
worker that died mid-call: the model was told the outcome is unknown).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError
from redis import Redis

from agent.wire import WIRE_RECORD, AppendLoopEvent, StepBegin, ToolCallEvent, ToolResultEvent, TurnEnded
from jobs.keys import SessionKey, subagents_key
from jobs.redis_text import text
from jobs.session.approvals import ApprovalStore
from jobs.session.meta import State
from jobs.session.repairs import Repair, repairs_of
from jobs.session.store import SessionStore
from jobs.usage import Totals, session_usage, turn_usage


class ToolCallRow(BaseModel):
    call_id: str
    name: str
    outcome: str  # ok | error | no result


class TurnRow(BaseModel):
    turn_id: str
    steps: int = 0
    tool_calls: list[ToolCallRow] = []
    ended: str | None = None  # the turn.ended reason; None while it runs (or if it never ended)
    duration_ms: int | None = None
    usage: Totals = Totals()


class ApprovalRow(BaseModel):
    tool: str
    summary: str
    state: str
    decided_by: str | None


class SessionDetail(BaseModel):
    key: str
    exists: bool
    state: State
    owner: str | None
    created_ms: int | None
    updated_ms: int | None
    last_turn_reason: str | None
    waiting_inputs: int
    usage: Totals
    turns: list[TurnRow]
    approvals: list[ApprovalRow]
    repairs: list[Repair]
    subagents: list[str]


def session_detail(redis: Redis, key: SessionKey) -> SessionDetail:
    store = SessionStore(redis, key)
    meta = store.meta.read()
    return SessionDetail(
        key=str(key),
        exists=store.meta.exists(),
        state=meta.state,
        owner=meta.owner,
        created_ms=meta.created,
        updated_ms=meta.updated,
        last_turn_reason=meta.last_turn_reason,
        waiting_inputs=int(redis.llen(store.inbox_key)),
        usage=session_usage(redis, key),
        turns=[
            turn.model_copy(update={"usage": turn_usage(redis, key, turn.turn_id)})
            for turn in turns_from_wire(store.read_wire())
        ],
        approvals=_approvals(store),
        repairs=repairs_of(redis, key),
        subagents=sorted(text(child) for child in redis.smembers(subagents_key(key))),
    )


def turns_from_wire(records: list[dict[str, Any]]) -> list[TurnRow]:
    reading = _WireReading()
    for raw in records:
        try:
            reading.fold(WIRE_RECORD.validate_python(raw))
        except ValidationError:
            continue  # a record of a newer version: status shows what it can read
    return list(reading.turns.values())


class _WireReading:
    """Turns as the wire tells them: a call belongs to its step's turn, a result to its call."""

    def __init__(self) -> None:
        self.turns: dict[str, TurnRow] = {}
        self.steps: dict[str, TurnRow] = {}
        self.calls: dict[str, ToolCallRow] = {}

    def fold(self, record: object) -> None:
        if isinstance(record, TurnEnded):
            turn = self._turn(record.turn_id)
            turn.ended, turn.duration_ms = record.reason, record.duration_ms
        elif isinstance(record, AppendLoopEvent):
            self._event(record.event)

    def _event(self, event: object) -> None:
        if isinstance(event, StepBegin) and event.turn_id:
            turn = self.steps[event.uuid] = self._turn(event.turn_id)
            turn.steps += 1
        elif isinstance(event, ToolCallEvent) and event.step_uuid in self.steps:
            call = ToolCallRow(call_id=event.tool_call_id, name=event.name, outcome="no result")
            self.steps[event.step_uuid].tool_calls.append(call)
            self.calls[event.tool_call_id] = call
        elif isinstance(event, ToolResultEvent) and event.tool_call_id in self.calls:
            self.calls[event.tool_call_id].outcome = "error" if event.result.is_error else "ok"

    def _turn(self, turn_id: str) -> TurnRow:
        return self.turns.setdefault(turn_id, TurnRow(turn_id=turn_id))


def _approvals(store: SessionStore) -> list[ApprovalRow]:
    approvals = ApprovalStore(store)
    states = approvals.states()
    return [
        ApprovalRow(
            tool=request.tool_name,
            summary=request.summary,
            state=states.get(request.approval_id, "pending"),
            decided_by=approvals.decided_by(request.approval_id),
        )
        for request in approvals.requests()
    ]
