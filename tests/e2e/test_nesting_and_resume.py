"""A sub-agent that delegates in turn, and a finished sub-agent given more work with `resume`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.testing import FakeLLM, Reply, calls, text
from jobs.session.store import SessionStore
from tests.e2e.agents import Agents, content_text, start_stack, tool_results, wait_for_answer
from tests.e2e.turns import Session


def task(prompt: str, description: str, **more: object) -> dict[str, object]:
    return {"prompt": prompt, "description": description, **more}


def test_a_sub_agent_delegates_to_its_own_sub_agent(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    agents = Agents()
    agents.add("NEST-ROOT", calls(("r1", "Agent", task("NEST-MID: plan", "mid"))), text("root done"))
    agents.add("NEST-MID", calls(("m1", "Agent", task("NEST-LEAF: dig", "leaf"))), text("mid done"))
    agents.add("NEST-LEAF", calls(("l1", "list_dir", {"path": "."})), text("leaf done"))
    fake_llm.default = agents
    stack = start_stack(tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=1)
    try:
        session = Session(redis, fake_slack, "NEST-ROOT")
        wait_for_answer(session, "root done")
        assert tool_results(agents.of("NEST-MID")[1]) == {"m1": "leaf done"}
        assert tool_results(agents.of("NEST-ROOT")[1]) == {"r1": "mid done"}
        leaf = SessionStore(redis, session.key.subagent("r1").subagent("m1"))
        lineage = leaf.meta.read()
        assert lineage.sub_depth == "2" and lineage.sub_root == str(session.key)
        (root_line,) = session.notices("progress")[-1].card.tools
        (mid_line,) = root_line.children
        assert (mid_line.name, mid_line.tool_call_id) == ("Agent", "m1")
        assert [line.name for line in mid_line.children] == ["list_dir"]
    finally:
        stack.stop()


def test_a_finished_sub_agent_continues_with_resume(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    agents = Agents()
    background = task("HELPER-FIRST: read the docs", "helper", run_in_background=True)

    def root(body: dict[str, Any]) -> Reply:
        # The helper's answer may steer the first turn or start the next: both are right.
        results = tool_results(body)
        if "b2" in results:
            return text("root: helper summarised")
        if any("docs read" in content_text(m) for m in body["messages"] if m["role"] == "user"):
            return calls(("b2", "Agent", task("HELPER-MORE: now summarise", "helper", resume="b1")))
        return text("root: helper started") if "b1" in results else calls(("b1", "Agent", background))

    agents.add("RESUME-ROOT", *[root] * 6)
    agents.add("HELPER-FIRST", text("docs read"))
    agents.add("HELPER-MORE", text("summary: all good"))
    fake_llm.default = agents
    stack = start_stack(tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=2)
    try:
        session = Session(redis, fake_slack, "RESUME-ROOT")
        wait_for_answer(session, "root: helper summarised")
        assert tool_results(agents.of("RESUME-ROOT")[-1])["b2"] == "summary: all good"
        more = agents.of("HELPER-MORE")[0]["messages"]
        assert [content_text(m) for m in more if m["role"] == "user"] == [
            "HELPER-FIRST: read the docs",
            "HELPER-MORE: now summarise",
        ]  # the same sub-agent, with its own history
    finally:
        stack.stop()
