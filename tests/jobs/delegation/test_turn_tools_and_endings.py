"""Per-turn tools by depth and profile; a sub-agent's ending (or its worker's death) reaches its parent."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent.delegation.launcher import ChildSpec
from agent.loop.ports import TurnOutcome
from agent.messages import ToolCall
from agent.skills import NestedSkillTooDeep
from agent.tools.base import ToolContext
from agent.tools.cancel import CancelSignal
from jobs.delegation.children import ChildInfo, Mode, active_children, create_child
from jobs.delegation.endings import child_turn_ended
from jobs.delegation.waits import StepWaits
from jobs.janitor import mark_interrupted
from jobs.keys import SessionKey
from jobs.session.state import set_state
from jobs.session.store import SessionStore
from jobs.settings import Settings
from jobs.turn.tools import turn_tools

ROOT = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")


def child(redis, *, depth: int = 1, profile: str = "coder", mode: Mode = "foreground", call: str = "a1"):
    info = ChildInfo(
        parent=ROOT, root=ROOT, depth=depth, agent_id=call, call_id=call, mode=mode,
        description="helper", profile=profile,
    )  # fmt: skip
    spec = ChildSpec(prompt="help", description="helper", profile=profile)
    return create_child(redis, info, spec, ROOT.subagent(call)), info


def settings_with_a_skill(tmp_path: Path) -> Settings:
    skill = tmp_path / "shared" / "tidy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: tidy\ndescription: tidy up\n---\nTidy.")
    return Settings(AGENT_WORKDIR=tmp_path / "ws", SHARED_SKILLS_DIR=tmp_path / "shared", LLM_MODEL="m")


def test_a_root_session_offers_delegation_and_listed_skills(redis, tmp_path: Path):
    tools = turn_tools(SessionStore(redis, ROOT), settings_with_a_skill(tmp_path), tmp_path, None, list)
    assert {"Agent", "AgentSwarm", "Skill", "shell", "write_file"} <= set(tools.registry.names)
    assert "- tidy: tidy up" in tools.system_prompt


def test_three_levels_down_nothing_delegates_and_skills_refuse(redis, tmp_path: Path):
    store, info = child(redis, depth=3)
    tools = turn_tools(store, settings_with_a_skill(tmp_path), tmp_path, info, list)
    assert "Agent" not in tools.registry.names and "AgentSwarm" not in tools.registry.names
    skill = tools.registry.get("Skill")
    with pytest.raises(NestedSkillTooDeep, match='"tidy" exceeded the maximum depth of 3'):
        context = ToolContext(workspace=tmp_path, signal=CancelSignal(), tool_call_id="k", tool_name="Skill")
        asyncio.run(skill.run(skill.parameters(skill="tidy"), context))


def test_an_explore_sub_agent_only_reads(redis, tmp_path: Path):
    store, info = child(redis, profile="explore")
    names = set(turn_tools(store, settings_with_a_skill(tmp_path), tmp_path, info, list).registry.names)
    assert {"read_file", "list_dir", "glob", "grep"} <= names
    assert not names & {"write_file", "edit_file", "shell", "Agent", "AgentSwarm"}


def test_a_finished_foreground_child_answers_its_parents_call(redis):
    parent = SessionStore(redis, ROOT)
    waits = StepWaits(parent)
    waits.expect("a1")
    waits.arm("t-s1", [ToolCall(id="a1", name="Agent", arguments="{}")])
    store, _ = child(redis)
    assert active_children(redis, ROOT) == [store.key]
    child_turn_ended(store, TurnOutcome("completed", answer="all green"), turn_timeout_s=60)
    parked = waits.parked()
    assert parked is not None and parked.results["a1"].text() == "all green"
    assert active_children(redis, ROOT) == []


def test_a_child_whose_worker_died_is_reported_lost(redis):
    parent = SessionStore(redis, ROOT)
    waits = StepWaits(parent)
    waits.expect("a1")
    waits.arm("t-s1", [ToolCall(id="a1", name="Agent", arguments="{}")])
    store, _ = child(redis)
    set_state(store, "running", turn_id="t-child")
    mark_interrupted(store)
    result = waits.parked().results["a1"]
    assert result.is_error
    assert result.text().startswith('Sub-agent "helper" stopped unexpectedly (its worker died).')
