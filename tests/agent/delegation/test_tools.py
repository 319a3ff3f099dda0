"""The Agent and AgentSwarm tools against a launcher double: what they start and what they answer."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent.delegation import (
    AgentBinding,
    AgentParams,
    AgentSwarmParams,
    AgentSwarmTool,
    AgentTool,
    ChildOutcome,
    Spawned,
    SpawnRefused,
    SpawnRequest,
    SwarmRequest,
    background_message,
    swarm_result,
    texts,
)
from agent.messages import ToolCall, assistant_message, user_message
from agent.projection.inherited import INHERITED_IN_FLIGHT_TOOL_OUTPUT
from agent.tools.base import ToolContext
from agent.tools.cancel import CancelSignal


@dataclass
class Launcher:
    started: list[SpawnRequest | SwarmRequest] = field(default_factory=list)
    refuse: str | None = None

    def spawn(self, request: SpawnRequest) -> Spawned:
        if self.refuse:
            raise SpawnRefused(self.refuse)
        self.started.append(request)
        return Spawned(f"agent-{request.tool_call_id}")

    def spawn_swarm(self, request: SwarmRequest) -> list[Spawned]:
        self.started.append(request)
        return [Spawned(f"agent-{i}") for i, _ in enumerate(request.children)]


HISTORY = [
    user_message("fix it"),
    assistant_message("", [ToolCall(id="call_9", name="Agent", arguments="{}")]).model_copy(
        update={"partial": True}
    ),
]


def binding(launcher: Launcher, **changes) -> AgentBinding:
    return AgentBinding(launcher=launcher, history=lambda: list(HISTORY), model="kimi", **changes)


def context(call_id: str = "call_9") -> ToolContext:
    return ToolContext(workspace=Path("."), signal=CancelSignal(), tool_call_id=call_id, tool_name="Agent")


def run_agent(tool: AgentTool, **args):
    return asyncio.run(tool.run(AgentParams(**args), context()))


def test_foreground_defers_and_starts_one_child():
    launcher = Launcher()
    result = run_agent(AgentTool(binding(launcher)), prompt="find the bug", description="bug hunt")
    assert result.deferred and not result.is_error
    (request,) = launcher.started
    assert (request.tool_call_id, request.background) == ("call_9", False)
    assert (request.child.prompt, request.child.profile, request.child.model) == (
        "find the bug",
        "coder",
        "kimi",
    )
    assert request.child.seed == ()


def test_background_answers_at_once_with_a_handle():
    launcher = Launcher()
    result = run_agent(AgentTool(binding(launcher)), prompt="p", description="scan", run_in_background=True)
    assert not result.deferred
    assert result.output.startswith("Sub-agent started in the background.\nagent_id: agent-call_9\n")
    assert 'Agent(resume="agent-call_9", prompt="...")' in result.output


def test_fork_seeds_the_inherited_snapshot_and_the_notice():
    launcher = Launcher()
    result = run_agent(AgentTool(binding(launcher)), prompt="look", description="d", fork=True)
    assert result.deferred
    child = launcher.started[0].child
    assert child.prompt.startswith(texts.FORK_CONTEXT_NOTICE) and child.prompt.endswith("\n\nlook")
    assert [m.role for m in child.seed] == ["user", "assistant", "tool"]
    assert (
        child.seed[-1].tool_call_id == "call_9" and child.seed[-1].text() == INHERITED_IN_FLIGHT_TOOL_OUTPUT
    )


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"fork": True, "resume": "a1"}, texts.FORK_WITH_RESUME_UNAVAILABLE),
        ({"fork": True, "subagent_type": "explore"}, texts.FORK_WITH_TYPE_UNAVAILABLE),
        ({"fork": True, "model": "other"}, texts.FORK_WITH_MODEL_UNAVAILABLE),
        ({"subagent_type": "wizard"}, 'Unknown subagent_type "wizard". Available: coder, explore.'),
        (
            {"model": "other"},
            'Unknown model "other": use "primary" (or leave model out) for the configured model.',
        ),
    ],
)
def test_refusals_are_error_results_and_start_nothing(args: dict, text: str):
    launcher = Launcher()
    result = run_agent(AgentTool(binding(launcher)), prompt="p", description="d", **args)
    assert result.is_error and result.output == text and launcher.started == []


def test_an_explore_agent_cannot_start_a_coder():
    launcher = Launcher()
    result = run_agent(AgentTool(binding(launcher, profile="explore")), prompt="p", description="d")
    assert result.is_error and result.output.startswith('A "explore" agent cannot start a "coder" sub-agent')


def test_the_launchers_refusal_reaches_the_model():
    result = run_agent(AgentTool(binding(Launcher(refuse="no such agent"))), prompt="p", description="d")
    assert result.is_error and result.output == "no such agent"


def test_depth_and_binding_decide_availability():
    assert AgentTool().unavailable_reason() is not None
    assert AgentTool(binding(Launcher(), depth=2)).unavailable_reason() is None
    assert "may not nest deeper than 3" in AgentTool(binding(Launcher(), depth=3)).unavailable_reason()


def test_swarm_one_child_per_item_in_order():
    launcher = Launcher()
    tool = AgentSwarmTool(binding(launcher))
    params = AgentSwarmParams(
        description="per file", prompt_template="lint {{item}} now", items=["a.py", "b.py"]
    )
    result = asyncio.run(tool.run(params, context("call_s")))
    assert result.deferred
    (request,) = launcher.started
    assert [c.prompt for c in request.children] == ["lint a.py now", "lint b.py now"]
    assert request.labels == ["a.py", "b.py"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"items": ["x"] * 129}, "at most 128"),
        ({"items": ["x"], "prompt_template": "no placeholder"}, "must contain {{item}}"),
        ({"items": []}, "at least one item"),
        ({"items": ["x"], "unknown": 1}, "Extra inputs are not permitted"),
    ],
)
def test_swarm_schema_is_strict(fields: dict, message: str):
    with pytest.raises(ValidationError, match=message):
        AgentSwarmParams(**{"description": "d", "prompt_template": "{{item}}", **fields})


def test_swarm_fork_with_resume_is_refused():
    launcher = Launcher()
    params = AgentSwarmParams(
        description="d", prompt_template="{{item}}", items=["x"], fork=True, resume_agent_ids={"a": "go"}
    )
    result = asyncio.run(AgentSwarmTool(binding(launcher)).run(params, context()))
    assert result.is_error and result.output == texts.SWARM_FORK_WITH_RESUME


def test_swarm_result_lists_items_in_order_and_fails_only_when_all_fail():
    outcomes = [
        ChildOutcome("completed", "a", answer="fine"),
        ChildOutcome("failed", "b", error="boom"),
        ChildOutcome("lost", "c"),
    ]
    result = swarm_result("three", ["a", "b", "c"], outcomes)
    assert not result.is_error
    text = result.text()
    assert text.splitlines()[0] == 'Swarm "three": 3 items, 1 succeeded, 2 failed.'
    assert text.index("[1/3] a\nfine") < text.index('[2/3] b (failed)\nSub-agent "b" failed: boom')
    assert '[3/3] c (failed)\nSub-agent "c" stopped unexpectedly' in text
    assert swarm_result("x", ["a"], [ChildOutcome("failed", "a", error="e")]).is_error


def test_a_background_answer_is_a_user_message_marked_as_a_sub_agent_result():
    message = background_message("call_1", ChildOutcome("completed", "scan", answer="3 issues"))
    assert message.role == "user" and message.origin.kind == "subagent_result"
    assert 'agent_id="call_1"' in message.text() and "3 issues" in message.text()
