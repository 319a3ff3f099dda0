"""Manual compaction on real Redis with the model over HTTP: records, checkpoint, stale apply."""

from __future__ import annotations

import asyncio
import json

from agent.fold import fold
from agent.messages import user_message
from agent.model.openai import OpenAICompatibleModel
from agent.testing import FakeLLM, Reply, text
from agent.wire import (
    AppendLoopEvent,
    AppendMessage,
    StepBegin,
    StepEnd,
    ToolCallEvent,
    ToolResultEvent,
    ToolResultPayload,
)
from jobs.compaction_job import compact
from jobs.control import request_compaction
from jobs.input import route_input
from jobs.keys import SessionKey
from jobs.session.history import checkpoint_key, load_fold
from jobs.session.lease import Lease
from jobs.session.state import set_state
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput
from jobs.settings import Settings
from jobs.usage import daily_usage, session_usage

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000500")


def seed(store: SessionStore, turns: int) -> None:
    for n in range(turns):
        store.append(AppendMessage(message=user_message(f"question {n}")))
        step = f"s{n}"
        store.append(AppendLoopEvent(event=StepBegin(uuid=step)))
        store.append(
            AppendLoopEvent(
                event=ToolCallEvent(
                    step_uuid=step, tool_call_id=f"c{n}", name="read_file", args={"path": "a"}
                )
            )
        )
        store.append(
            AppendLoopEvent(
                event=ToolResultEvent(tool_call_id=f"c{n}", result=ToolResultPayload(output="body " * 50))
            )
        )
        store.append(AppendLoopEvent(event=StepEnd(uuid=step, finish_reason="tool_calls")))
        store.append(AppendLoopEvent(event=StepBegin(uuid=f"{step}b")))
        store.append(AppendLoopEvent(event=StepEnd(uuid=f"{step}b", finish_reason="stop")))


def run(store, fake_llm: FakeLLM) -> str:
    model = OpenAICompatibleModel(fake_llm.base_url, "m", stream=False)
    return asyncio.run(compact(store, Settings.load(LLM_CONTEXT_WINDOW=100_000), model, "W1"))


def test_manual_compaction_records_the_range_and_keeps_a_checkpoint(redis, fake_llm: FakeLLM):
    store = SessionStore(redis, KEY)
    seed(store, 6)
    before = fold(store.read_wire())
    fake_llm.script(text("what happened so far"))

    assert run(store, fake_llm) == "compacted"

    records = store.read_wire()
    applied = next(r for r in records if r["type"] == "context.apply_compaction")
    assert applied["source"] == "manual"
    assert applied["wire_start"] == before[0].id
    assert applied["compacted_count"] + applied["kept_count"] == len(before)
    assert "what happened so far" in applied["context_summary"]
    assert redis.exists(checkpoint_key(store))
    assert load_fold(store).history == fold(records)  # checkpoint + tail == the whole log
    assert [r["type"] for r in records][-1] == "full_compaction.complete"
    kinds = [(n.kind, getattr(n, "state", None)) for _, n in store.notices()]
    assert kinds == [("compaction", "started"), ("compaction", "done")]
    summary_request = fake_llm.accepted()[0]
    assert "tools" not in summary_request and fake_llm.rejected == []


def test_a_stale_summary_is_not_applied(redis, fake_llm: FakeLLM):
    store = SessionStore(redis, KEY)
    seed(store, 3)

    def meanwhile(body: dict) -> Reply:  # the history changes under the summary (not by user input)
        step = "late"
        store.append(AppendLoopEvent(event=StepBegin(uuid=step)))
        store.append(
            AppendLoopEvent(event=ToolCallEvent(step_uuid=step, tool_call_id="x", name="read_file", args={}))
        )
        return text("summary of a history that no longer exists")

    fake_llm.default = meanwhile
    assert run(store, fake_llm) == "failed"
    types = [r["type"] for r in store.read_wire()]
    assert "context.apply_compaction" not in types and "full_compaction.cancel" in types
    failed = [n for _, n in store.notices() if n.kind == "compaction" and n.state == "failed"]
    assert "kept the full history" in failed[0].detail


def test_input_during_a_compaction_waits_in_the_inbox(redis):
    store = SessionStore(redis, KEY)
    seed(store, 1)
    lease = Lease.acquire(store, owner="compaction")
    assert route_input(store, UserInput(text="still there?", user="W1", ts="1.9")) == "inbox"
    assert lease.release_if_idle() is False  # the job schedules a turn for it instead
    assert [i.text for i in store.peek_inbox()] == ["still there?"]


def test_compaction_is_refused_while_a_turn_runs(redis):
    store = SessionStore(redis, KEY)
    seed(store, 1)
    set_state(store, "running")
    result = request_compaction(redis, KEY, by="W1", turn_timeout_s=60)
    assert not result.ok and "Cannot compact while a turn is active" in result.message


def test_a_manual_compactions_summary_request_is_counted_for_who_asked(redis, fake_llm: FakeLLM):
    store = SessionStore(redis, KEY)
    seed(store, 6)
    fake_llm.script(text("what happened so far"))
    assert run(store, fake_llm) == "compacted"
    prompt = len(json.dumps(fake_llm.accepted()[0]["messages"])) // 4
    applied = next(r for r in store.read_wire() if r["type"] == "context.apply_compaction")
    assert applied["usage"]["input_tokens"] == prompt and not applied["usage"]["estimated"]
    spent = session_usage(redis, KEY)
    assert (spent.input, spent.steps) == (prompt, 1)
    assert daily_usage(redis, KEY.team, "user", "W1") == spent
