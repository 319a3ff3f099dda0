"""Projection repairs on the session's record, once per distinct repair (jobs.session.repairs)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from redis import Redis

from agent.fold import HistoryFold
from agent.loop.turn_loop import Loop
from agent.messages import Message, ToolCall, tool_message, user_message
from agent.model.openai import OpenAICompatibleModel
from agent.projection.report import ProjectionRepair
from agent.testing import FakeLLM, text
from agent.tools.executor import ToolExecutor
from agent.tools.registry import default_registry
from agent.wire import AppendMessage
from jobs.keys import SessionKey, fixed_session_keys, repairs_key
from jobs.session import repairs
from jobs.session.repairs import repairs_of
from jobs.session.store import SessionStore
from jobs.turn.sink import RedisTurnSink

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000500")


def broken_session(redis: Redis) -> SessionStore:
    """A result whose call is nowhere in the history: every projection drops it."""
    store = SessionStore(redis, KEY)
    listing = Message(role="assistant", tool_calls=[ToolCall(id="c1", name="list_dir", arguments="{}")])
    for message in (user_message("go"), listing, tool_message("c1", "a.txt"), tool_message("ghost", "stale")):
        store.append(AppendMessage(message=message))
    store.append(AppendMessage(message=user_message("next")))
    return store


def run_turn(store: SessionStore, turn_id: str, base_url: str, workspace: Path) -> str:
    loop = Loop(
        model=OpenAICompatibleModel(base_url, "fake-model"),
        executor_factory=lambda approver: ToolExecutor(default_registry(), workspace=workspace),
        sink=RedisTurnSink(store, turn_id),
        folder=HistoryFold.from_records(store.read_wire()),
        system_prompt="test",
        tool_declarations=[],
    )
    return asyncio.run(loop.run_turn(turn_id)).reason


def test_a_history_repaired_in_every_turn_is_recorded_once_with_the_turn_and_step_that_first_needed_it(
    redis: Redis, fake_llm: FakeLLM, tmp_path: Path
):
    store = broken_session(redis)
    fake_llm.script(text("first answer"), text("second answer"))

    assert run_turn(store, "t1", fake_llm.base_url, tmp_path) == "completed"
    assert run_turn(store, "t2", fake_llm.base_url, tmp_path) == "completed"

    [repair] = repairs_of(redis, KEY)
    assert (repair.kind, repair.call_ids, repair.calls, repair.turn_id, repair.step) == (
        "orphan_tool_result_dropped",
        ["ghost"],
        1,
        "t1",
        1,
    )
    assert len(fake_llm.accepted()) == 2 and fake_llm.rejected == []
    assert repair.summary() == "orphan_tool_result_dropped (calls ghost) at step 1 of t1"


def repair_of(by_kind: dict[str, list[str]]) -> ProjectionRepair:
    return ProjectionRepair(signature="s", counters={}, tool_call_ids=[], call_ids_by_kind=by_kind)


def test_each_kind_and_set_of_calls_is_a_repair_of_its_own_listed_oldest_first(redis: Redis):
    store = SessionStore(redis, KEY)
    sink = RedisTurnSink(store, "t1")
    asyncio.run(
        sink.repaired(1, repair_of({"tool_result_synthesized": ["c1"], "leading_non_user_dropped": []}))
    )
    asyncio.run(sink.repaired(2, repair_of({"tool_result_synthesized": ["c1"]})))  # the same: not again
    asyncio.run(sink.repaired(3, repair_of({"tool_result_synthesized": ["c1", "c2"]})))

    listed = [(r.kind, r.call_ids, r.step) for r in repairs_of(redis, KEY)]
    assert sorted(listed) == sorted(
        [
            ("tool_result_synthesized", ["c1"], 1),
            ("leading_non_user_dropped", [], 1),
            ("tool_result_synthesized", ["c1", "c2"], 3),
        ]
    )
    assert [step for _, _, step in listed] == [1, 1, 3]
    assert repairs_key(KEY) in fixed_session_keys(KEY)  # retention and purge remove it with the session


def test_hostile_call_ids_are_bounded_and_a_session_keeps_at_most_max_recorded(redis: Redis):
    store = SessionStore(redis, KEY)
    sink = RedisTurnSink(store, "t1")
    many = [f"{'x' * 5000}{n}" for n in range(50)]
    asyncio.run(sink.repaired(1, repair_of({"orphan_tool_result_dropped": many})))
    [repair] = repairs_of(redis, KEY)
    assert repair.calls == 50 and len(repair.call_ids) == repairs.MAX_CALL_IDS
    assert all(len(call_id) == repairs.MAX_CALL_ID_CHARS for call_id in repair.call_ids)
    assert repair.summary().endswith(" and 30 more) at step 1 of t1")

    for n in range(repairs.MAX_RECORDED + 10):
        asyncio.run(sink.repaired(2, repair_of({"tool_result_reordered": [f"c{n}"]})))
    assert len(repairs_of(redis, KEY)) == repairs.MAX_RECORDED
