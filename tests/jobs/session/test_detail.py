"""One session read back for `threadline status --thread` (jobs.session.detail), from records a
turn writes: which calls got a result, how the turn ended, what was repaired."""

from __future__ import annotations

from redis import Redis

from agent.wire import (
    AppendLoopEvent,
    StepBegin,
    ToolCallEvent,
    ToolResultEvent,
    ToolResultPayload,
    TurnEnded,
)
from gateway.status_report import detail_lines
from jobs.keys import SessionKey
from jobs.session.detail import session_detail
from jobs.session.repairs import record_repairs
from jobs.session.store import SessionStore

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000600")


def a_turn_with_three_calls(store: SessionStore, turn_id: str) -> None:
    store.append(AppendLoopEvent(event=StepBegin(uuid="s1", turn_id=turn_id, step=1)))
    for call_id, name in (("c1", "read_file"), ("c2", "shell"), ("c3", "grep")):
        store.append(AppendLoopEvent(event=ToolCallEvent(step_uuid="s1", tool_call_id=call_id, name=name)))
    ok, failed = ToolResultPayload(output="text"), ToolResultPayload(output="no such file", is_error=True)
    store.append(AppendLoopEvent(event=ToolResultEvent(tool_call_id="c1", result=ok)))
    store.append(AppendLoopEvent(event=ToolResultEvent(tool_call_id="c3", result=failed)))
    store.append(AppendLoopEvent(event=StepBegin(uuid="s2", turn_id=turn_id, step=2)))
    store.append(TurnEnded(turn_id=turn_id, reason="interrupted", duration_ms=4200))


def test_a_turn_reads_back_with_each_calls_outcome_and_its_ending(redis: Redis):
    store = SessionStore(redis, KEY)
    a_turn_with_three_calls(store, "turn-1")

    (turn,) = session_detail(redis, KEY).turns

    assert (turn.turn_id, turn.steps, turn.ended, turn.duration_ms) == ("turn-1", 2, "interrupted", 4200)
    outcomes = {call.call_id: (call.name, call.outcome) for call in turn.tool_calls}
    assert outcomes == {"c1": ("read_file", "ok"), "c2": ("shell", "no result"), "c3": ("grep", "error")}


def test_repairs_of_the_session_are_listed_once_each(redis: Redis):
    store = SessionStore(redis, KEY)
    a_turn_with_three_calls(store, "turn-1")
    for step in (1, 2):
        record_repairs(store, "turn-1", step, {"orphan_tool_result_dropped": ["ghost"]})

    detail = session_detail(redis, KEY)

    recorded = [(r.kind, r.call_ids, r.step) for r in detail.repairs]
    assert recorded == [("orphan_tool_result_dropped", ["ghost"], 1)]
    shown = "\n".join(detail_lines(detail))
    assert "repair orphan_tool_result_dropped (calls ghost) at step 1 of turn-1" in shown
    assert "shell c2: no result" in shown


def test_a_session_that_was_never_written_reads_as_empty(redis: Redis):
    detail = session_detail(redis, KEY)
    assert (detail.exists, detail.state, detail.turns, detail.repairs) == (False, "idle", [], [])
