"""The loop on the real tools and model client, against the strict fake provider over HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.fold import INTERRUPTED_TOOL_RESULT
from agent.loop.ports import ParkedStep, ToolFinished
from agent.loop.turn_loop import LoopConfig
from agent.messages import assistant_message, user_message
from agent.projection.projector import project, project_strict
from agent.testing import FakeLLM, Reply, calls, text
from agent.tools.policy import Approved, AskForApproval, Rejected
from agent.wire import AppendMessage
from tests.agent.loop.harness import Heard, MemorySink, run_turn
from tests.polling import wait_for
from tests.sandboxing import host_pids, sleep_marker


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def test_three_tool_steps_then_an_answer(fake_llm: FakeLLM, tmp_path: Path):
    (tmp_path / "a.txt").write_text("alpha\n")
    fake_llm.script(
        calls(("c1", "read_file", {"path": "a.txt"})),
        calls(("c2", "write_file", {"path": "b.txt", "content": "beta"})),
        calls(("c3", "list_dir", {"path": "."})),
        text("done: wrote b.txt"),
    )
    sink = MemorySink()
    sink.append_user("copy things")
    heard = Heard()
    outcome = run_turn(sink, fake_llm.base_url, tmp_path, reporter=heard)

    assert outcome.reason == "completed" and outcome.answer == "done: wrote b.txt" and outcome.steps == 4
    assert (tmp_path / "b.txt").read_text() == "beta"
    requests = fake_llm.accepted()
    assert len(requests) == 4 and fake_llm.rejected == []
    assert "alpha" in tool_messages(requests[1])[0]["content"]
    assert [e.call.id for e in heard.events if isinstance(e, ToolFinished)] == ["c1", "c2", "c3"]
    assert sink.types()[-1] == "turn.ended"
    # the wire alone rebuilds what the model saw
    assert [m.role for m in sink.history()] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


def test_calls_are_on_the_wire_before_any_runs(fake_llm: FakeLLM, tmp_path: Path):
    fake_llm.script(calls(("c1", "list_dir", {"path": "."}), ("c2", "list_dir", {"path": "."})), text("ok"))
    sink = MemorySink()
    sink.append_user("look")
    run_turn(sink, fake_llm.base_url, tmp_path)
    types = sink.types()
    assert types.index("tool.result") > max(i for i, t in enumerate(types) if t == "tool.call")


def test_steer_lands_after_the_current_tool_results(fake_llm: FakeLLM, tmp_path: Path):
    gate = __import__("threading").Event()
    fake_llm.script(calls(("c1", "shell", {"command": "sleep 0.3; echo slow"})), Reply(text="ok", gate=gate))
    sink = MemorySink()
    sink.append_user("run it")

    async def steer(loop):
        deadline = asyncio.get_running_loop().time() + 10
        while not fake_llm.requests:  # the turn has taken its input and asked the model
            assert asyncio.get_running_loop().time() < deadline, "the turn never asked the model"
            await asyncio.sleep(0.01)
        sink.inbox.append(user_message("also check b"))
        gate.set()

    run_turn(sink, fake_llm.base_url, tmp_path, during=steer)
    second = fake_llm.accepted()[1]["messages"]
    roles = [m["role"] for m in second]
    assert roles[-3:] == ["assistant", "tool", "user"]
    assert second[-1]["content"] == "also check b"
    assert "turn.steer" in sink.types()


def test_steer_after_the_answer_drives_one_more_step(fake_llm: FakeLLM, tmp_path: Path):
    sink = MemorySink()
    sink.append_user("hi")

    def reply(body: dict) -> Reply:
        if len(fake_llm.requests) == 1:
            sink.inbox.append(user_message("one more thing"))
            return text("first answer")
        return text("second answer")

    fake_llm.default = reply
    outcome = run_turn(sink, fake_llm.base_url, tmp_path)
    assert outcome.answer == "second answer" and outcome.steps == 2


def test_cancel_during_a_long_shell_kills_it_and_asks_the_model_nothing_more(
    fake_llm: FakeLLM, tmp_path: Path
):
    sleep = sleep_marker()  # found on the host by its command line: `$$` is a pid of the sandbox
    fake_llm.script(calls(("c1", "shell", {"command": f"sleep {sleep}", "timeout": 60})))
    sink = MemorySink()
    sink.append_user("long job")

    async def cancel_when_running(loop):
        await asyncio.to_thread(wait_for, lambda: host_pids(sleep), what="the shell to start")
        loop.cancel("user_cancelled")

    outcome = run_turn(sink, fake_llm.base_url, tmp_path, during=cancel_when_running)
    assert outcome.reason == "cancelled"
    wait_for(lambda: not host_pids(sleep), timeout=5, what="the command to be gone")
    assert len(fake_llm.requests) == 1
    result = next(r for r in sink.records if r.get("event", {}).get("type") == "tool.result")
    assert "The user manually interrupted" in result["event"]["result"]["output"]
    assert sink.types()[-2:] == ["turn.cancel", "turn.ended"]


def test_interrupted_call_reaches_the_model_as_unknown(fake_llm: FakeLLM, tmp_path: Path):
    sink = MemorySink()
    sink.append_user("go")
    # a previous worker recorded the call and died before its result
    sink.record_raw = None
    for record in [
        {"type": "context.append_loop_event", "event": {"type": "step.begin", "uuid": "old-s1"}},
        {"type": "context.append_loop_event",
         "event": {"type": "tool.call", "step_uuid": "old-s1", "tool_call_id": "dead", "name": "shell",
                   "arguments": '{"command": "rm -rf build"}'}},
    ]:  # fmt: skip
        sink.records.append({**record, "id": f"{len(sink.records) + 1}-0"})
    run_turn(sink, fake_llm.base_url, tmp_path)
    sent = fake_llm.accepted()[0]["messages"]
    unknown = [m for m in sent if m["role"] == "tool" and m["tool_call_id"] == "dead"]
    assert len(unknown) == 1 and INTERRUPTED_TOOL_RESULT in unknown[0]["content"]


def test_provider_400_on_structure_is_resent_once_strictly(fake_llm: FakeLLM, tmp_path: Path):
    fake_llm.script(
        Reply(status=400, error={"error": {"message": "Invalid 'messages': tool_call ordering"}}), text("ok")
    )
    sink = MemorySink()
    sink.append_user("hi")
    for said in ("first half", "second half"):  # two assistants in a row: only strict merges them
        sink.record_now(AppendMessage(message=assistant_message(said)), said)
    sink.append_user("go on")
    history = sink.history()

    outcome = run_turn(sink, fake_llm.base_url, tmp_path)
    assert outcome.answer == "ok" and len(fake_llm.requests) == 2
    first, resent = (request["messages"][1:] for request in fake_llm.requests)  # after the system prompt
    assert [m["role"] for m in first] == [m.role for m in project(history)]
    assert [m["role"] for m in resent] == [m.role for m in project_strict(history)]
    assert [first[1]["content"], first[2]["content"]] == ["first half", "second half"]
    assert resent == [first[0], {"role": "assistant", "content": "first halfsecond half"}, first[3]]


def test_max_steps_ends_the_turn_with_a_clear_message(fake_llm: FakeLLM, tmp_path: Path):
    fake_llm.default = lambda body: calls((f"c{len(fake_llm.requests)}", "list_dir", {"path": "."}))
    sink = MemorySink()
    sink.append_user("loop forever")
    outcome = run_turn(sink, fake_llm.base_url, tmp_path, config=LoopConfig(max_steps_per_turn=3))
    assert outcome.reason == "failed" and "max_steps_per_turn=3" in (outcome.error or "")
    assert len(fake_llm.requests) == 3


def test_duplicate_call_ids_in_one_response_are_made_unique(fake_llm: FakeLLM, tmp_path: Path):
    fake_llm.script(
        calls(("same", "list_dir", {"path": "."}), ("same", "list_dir", {"path": "."})), text("ok")
    )
    sink = MemorySink()
    sink.append_user("x")
    run_turn(sink, fake_llm.base_url, tmp_path)
    assert fake_llm.rejected == []
    assert [m["tool_call_id"] for m in tool_messages(fake_llm.accepted()[1])] == ["same", "same__2"]


def test_invalid_json_arguments_and_unknown_tools_are_told_to_the_model(fake_llm: FakeLLM, tmp_path: Path):
    fake_llm.script(
        Reply(tool_calls=[("c1", "read_file", '{"path": '), ("c2", "teleport", "{}")]), text("sorry")
    )
    sink = MemorySink()
    sink.append_user("x")
    run_turn(sink, fake_llm.base_url, tmp_path)
    results = {m["tool_call_id"]: m["content"] for m in tool_messages(fake_llm.accepted()[1])}
    assert "Invalid args" in results["c1"] and "not valid JSON" in results["c1"]
    assert 'Tool "teleport" not found' in results["c2"]
    assert fake_llm.accepted()[1]["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"path": '


def test_a_call_needing_approval_parks_the_step_and_runs_once_approved(fake_llm: FakeLLM, tmp_path: Path):
    marker = tmp_path / "ran"
    fake_llm.script(calls(("c1", "shell", {"command": f"echo x >> {marker}"})))
    sink = MemorySink()
    sink.append_user("run")
    policy = AskForApproval()
    outcome = run_turn(sink, fake_llm.base_url, tmp_path, policy=policy)
    assert outcome.reason == "awaiting_approval" and not marker.exists()
    step_uuid, parked = sink.parked[0]
    assert [p.call.id for p in parked] == ["c1"]

    fake_llm.script(text("ran it"))
    decided = ParkedStep(step_uuid, {"c1": Approved()})
    outcome = run_turn(sink, fake_llm.base_url, tmp_path, policy=policy, parked=decided, turn_id="t2")
    assert outcome.answer == "ran it"
    assert marker.read_text() == "x\n"


def test_a_denied_call_gets_the_spec_denial_text(fake_llm: FakeLLM, tmp_path: Path):
    fake_llm.script(calls(("c1", "shell", {"command": "echo no"})))
    sink = MemorySink()
    sink.append_user("run")
    policy = AskForApproval()
    run_turn(sink, fake_llm.base_url, tmp_path, policy=policy)
    step_uuid = sink.parked[0][0]
    fake_llm.script(text("ok"))
    run_turn(
        sink,
        fake_llm.base_url,
        tmp_path,
        policy=policy,
        parked=ParkedStep(step_uuid, {"c1": Rejected("not now")}),
        turn_id="t2",
    )
    result = tool_messages(fake_llm.accepted()[-1])[0]["content"]
    assert 'Tool "shell" was not run because the user rejected the approval request.' in result
    assert "not now" in result


def test_a_steps_answer_is_written_in_one_write_and_each_result_as_it_comes(
    fake_llm: FakeLLM, tmp_path: Path
):
    answer = calls(("c1", "list_dir", {"path": "."}), ("c2", "list_dir", {"path": "."}))
    answer.text = "looking first"
    fake_llm.script(answer, text("ok"))
    sink = MemorySink()
    sink.append_user("look")

    outcome = run_turn(sink, fake_llm.base_url, tmp_path)

    assert outcome.reason == "completed"
    step_one = [keys for keys in sink.writes if keys[0].startswith("t1-s1")]
    assert step_one[0] == ["t1-s1:begin", "t1-s1:part:0", "t1-s1:call:c1", "t1-s1:call:c2"]
    assert sorted(keys[0] for keys in step_one[1:3]) == ["t1-s1:result:c1", "t1-s1:result:c2"]
    assert step_one[3:] == [["t1-s1:end"]]
    assert sink.writes[-1] == ["t1:ended"]
