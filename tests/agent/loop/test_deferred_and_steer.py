"""The loop's hooks for delegation and skills: deferred results park a step; a tool's steer
message lands after every result of its step."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.fold import HistoryFold
from agent.loop.ports import ParkedStep, TurnOutcome
from agent.loop.turn_loop import Loop, LoopConfig
from agent.messages import ToolCall
from agent.model.openai import OpenAICompatibleModel
from agent.skills import SkillCatalog, SkillRoot, SkillTool
from agent.testing import FakeLLM, calls, text
from agent.tools.base import ToolContext, ToolResult
from agent.tools.builtin import builtin_tools
from agent.tools.executor import ToolExecutor
from agent.tools.registry import ToolRegistry, openai_tool_declarations
from tests.agent.loop.harness import MemorySink
from tests.agent.tools.helpers import ScriptedTool


@dataclass
class Waits:
    """A DeferredResults double: answers what the test put in, records what the loop asked."""

    ready: dict[str, ToolResult] | None = None
    asked: list[tuple[str, list[str]]] = field(default_factory=list)

    async def wait(self, step_uuid: str, calls: list[ToolCall]) -> dict[str, ToolResult] | None:
        self.asked.append((step_uuid, [call.id for call in calls]))
        return self.ready


async def _deferred(args: Any, context: ToolContext) -> ToolResult:
    return ToolResult("a sub-agent is on it", deferred=True)


def run(
    sink: MemorySink,
    base_url: str,
    workspace: Path,
    tools: list[Any],
    *,
    waits: Waits | None = None,
    parked: ParkedStep | None = None,
    turn_id: str = "t1",
) -> TurnOutcome:
    registry = ToolRegistry([*builtin_tools(), *tools])
    loop = Loop(
        model=OpenAICompatibleModel(base_url, "fake-model"),
        executor_factory=lambda approver: ToolExecutor(registry, workspace=workspace, approver=approver),
        sink=sink,
        folder=HistoryFold.from_records(sink.records),
        system_prompt="test",
        tool_declarations=openai_tool_declarations(registry),
        config=LoopConfig(),
        deferrals=waits,
    )
    return asyncio.run(loop.run_turn(turn_id, parked))


def roles(request: dict) -> list[str]:
    return [m["role"] for m in request["messages"]]


def test_a_deferred_call_parks_the_step_and_the_continuation_records_its_result(
    fake_llm: FakeLLM, tmp_path: Path
):
    fake_llm.script(calls(("a1", "delegate", {}), ("l1", "list_dir", {"path": "."})), text("both done"))
    sink = MemorySink()
    sink.append_user("split the work")
    waits = Waits()
    tools = [ScriptedTool("delegate", _deferred, accesses=[])]

    first = run(sink, fake_llm.base_url, tmp_path, tools, waits=waits)
    assert first.reason == "awaiting_agents"
    assert waits.asked == [("t1-s1", ["a1"])]
    assert len(fake_llm.requests) == 1
    assert "turn.ended" not in sink.types()  # a parked turn has not ended
    folder = HistoryFold.from_records(sink.records)
    assert [call.id for call in folder.pending_calls()] == ["a1"]  # the local call already ran

    answer = ToolResult("the sub-agent's answer")
    second = run(
        sink,
        fake_llm.base_url,
        tmp_path,
        tools,
        parked=ParkedStep("t1-s1", results={"a1": answer}),
        turn_id="t2",
    )
    assert second.reason == "completed" and second.answer == "both done"
    sent = fake_llm.accepted()[1]["messages"]
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert results["a1"] == "the sub-agent's answer"
    assert sink.types().count("turn.ended") == 1


def test_results_that_arrived_before_the_park_go_on_in_the_same_turn(fake_llm: FakeLLM, tmp_path: Path):
    fake_llm.script(calls(("a1", "delegate", {})), text("done"))
    sink = MemorySink()
    sink.append_user("go")
    waits = Waits(ready={"a1": ToolResult("fast answer", is_error=True)})
    outcome = run(
        sink, fake_llm.base_url, tmp_path, [ScriptedTool("delegate", _deferred, accesses=[])], waits=waits
    )
    assert outcome.reason == "completed" and len(fake_llm.accepted()) == 2
    tool = next(m for m in sink.history() if m.role == "tool")
    assert tool.text() == "fast answer" and tool.is_error


def test_a_cancelled_turn_closes_its_deferred_calls_as_interrupted_by_the_user(
    fake_llm: FakeLLM, tmp_path: Path
):
    fake_llm.script(calls(("a1", "delegate", {})))
    sink = MemorySink()
    sink.append_user("go")

    async def cancel_then_defer(args: Any, context: ToolContext) -> ToolResult:
        context.signal.cancel("user_cancelled")
        return ToolResult("started", deferred=True)

    waits = Waits()
    tools = [ScriptedTool("delegate", cancel_then_defer, accesses=[])]
    outcome = run(sink, fake_llm.base_url, tmp_path, tools, waits=waits)
    assert outcome.reason == "cancelled"
    assert waits.asked == []  # nothing parks on sub-agents of a cancelled turn
    tool = next(m for m in sink.history() if m.role == "tool")
    assert tool.text().startswith('The user manually interrupted "delegate"')


def test_a_loaded_skill_arrives_after_every_result_of_its_step(fake_llm: FakeLLM, tmp_path: Path):
    skills = tmp_path / "skills" / "tidy"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("---\nname: tidy\ndescription: tidy up\n---\nTidy $ARGUMENTS now.")
    catalog = SkillCatalog.load([SkillRoot(tmp_path / "skills", "workspace")])

    async def slow_list(args: Any, context: ToolContext) -> ToolResult:
        await asyncio.sleep(0.2)  # finishes after the Skill call, so its result is still pending
        return ToolResult("listing")

    fake_llm.script(
        calls(("s1", "Skill", {"skill": "tidy", "args": "src"}), ("l1", "slow_list", {})), text("tidied")
    )
    sink = MemorySink()
    sink.append_user("tidy src")
    outcome = run(
        sink,
        fake_llm.base_url,
        tmp_path,
        [SkillTool(catalog), ScriptedTool("slow_list", slow_list, accesses=[])],
    )
    assert outcome.reason == "completed"
    second = fake_llm.accepted()[1]
    assert roles(second)[-4:] == ["assistant", "tool", "tool", "user"]
    assert "Tidy src now." in second["messages"][-1]["content"]
    steer = sink.history()[-2]
    assert steer.origin is not None and (steer.origin.kind, steer.origin.trigger) == (
        "skill_activation",
        "model-tool",
    )
    steers = [r for r in sink.records if r["type"] == "turn.steer"]
    assert len(steers) == 1 and steers[0]["origin"]["kind"] == "skill_activation"
