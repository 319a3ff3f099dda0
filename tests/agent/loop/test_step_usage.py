"""Each step's usage on the wire: the provider's numbers, or our estimate labelled as one."""

from __future__ import annotations

import json
from pathlib import Path

from agent.loop.ports import ParkedStep
from agent.testing import FakeLLM, Reply, calls, text
from agent.tools.policy import Approved, AskForApproval
from tests.agent.loop.harness import MemorySink, run_turn


def step_records(sink: MemorySink, kind: str) -> list[dict]:
    return [
        r["event"]
        for r in sink.records
        if r["type"] == "context.append_loop_event" and r["event"]["type"] == kind
    ]


def test_every_step_records_the_providers_usage_on_its_begin_and_its_end(tmp_path: Path):
    fake = FakeLLM(cached_tokens=3).start()
    try:
        fake.script(calls(("c1", "list_dir", {"path": "."})), text("two files"))
        sink = MemorySink()
        sink.append_user("what is here?")
        assert run_turn(sink, fake.base_url, tmp_path).answer == "two files"
        prompts = [len(json.dumps(body["messages"])) // 4 for body in fake.accepted()]
        begins, ends = step_records(sink, "step.begin"), step_records(sink, "step.end")
        assert [b["usage"]["input_tokens"] for b in begins] == prompts
        assert [e["usage"] for e in ends] == [b["usage"] for b in begins]
        assert all(b["usage"]["cached_tokens"] == 3 and not b["usage"]["estimated"] for b in begins)
    finally:
        fake.stop()


def test_without_usage_from_the_provider_the_estimate_is_recorded_as_one(fake_llm: FakeLLM, tmp_path: Path):
    fake_llm.script(Reply(text="a reply of some forty characters or so.", usage=False))
    sink = MemorySink()
    sink.append_user("hello")
    run_turn(sink, fake_llm.base_url, tmp_path)
    usage = step_records(sink, "step.end")[0]["usage"]
    assert usage["estimated"] is True and usage["cached_tokens"] == 0
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0


def test_a_parked_step_gets_its_usage_on_the_end_the_continuation_writes(fake_llm: FakeLLM, tmp_path: Path):
    fake_llm.script(calls(("c1", "shell", {"command": "echo hi"})))
    sink = MemorySink()
    sink.append_user("run it")
    policy = AskForApproval()
    assert run_turn(sink, fake_llm.base_url, tmp_path, policy=policy).reason == "awaiting_approval"
    step_uuid, _ = sink.parked[0]
    fake_llm.script(text("ran"))
    decided = ParkedStep(step_uuid, {"c1": Approved()})
    run_turn(sink, fake_llm.base_url, tmp_path, policy=policy, parked=decided, turn_id="t2")
    begin = next(b for b in step_records(sink, "step.begin") if b["uuid"] == step_uuid)
    end = next(e for e in step_records(sink, "step.end") if e["uuid"] == step_uuid)
    assert end["usage"] == begin["usage"] and begin["usage"]["input_tokens"] > 0
