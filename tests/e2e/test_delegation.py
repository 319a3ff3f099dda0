"""Sub-agents on real RQ workers: parallel children, no worker held while waiting, nested
progress, background answers, and nothing posted to Slack for a sub-agent."""

from __future__ import annotations

import threading
from pathlib import Path

from agent.testing import FakeLLM, Reply, calls, text
from tests.e2e.agents import Agents, start_stack, state, subagent_keys, tool_results, wait_for_answer
from tests.e2e.sessions import link, slash_command
from tests.e2e.turns import CHANNEL, Session
from tests.polling import wait_for

PARENT = "PARENT-TASK"
BACKGROUND = {"run_in_background": True}


def two_children(agents: Agents, *, barrier: threading.Barrier | None = None) -> None:
    def first_step(reply: Reply) -> object:
        def answer(body: dict) -> Reply:
            if barrier is not None:
                barrier.wait()  # both children ask before either is answered: they run at once
            return reply

        return answer

    agents.add(
        PARENT,
        calls(
            ("a1", "Agent", {"prompt": "CHILD-ONE: list the workspace", "description": "list files"}),
            ("a2", "Agent", {"prompt": "CHILD-TWO: say hello", "description": "greet"}),
        ),
        text("parent: both sub-agents answered"),
    )
    agents.add("CHILD-ONE", first_step(calls(("c1", "list_dir", {"path": "."}))), text("answer one"))
    agents.add("CHILD-TWO", first_step(text("answer two")))


def test_two_sub_agents_run_in_parallel_and_both_answers_reach_the_parent(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    agents = Agents()
    two_children(agents, barrier=threading.Barrier(2, timeout=30))
    fake_llm.default = agents
    stack = start_stack(tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=2)
    try:
        session = Session(redis, fake_slack, PARENT)
        wait_for_answer(session, "parent: both sub-agents answered")
        parent_requests = agents.of(PARENT)
        assert len(parent_requests) == 2
        assert tool_results(parent_requests[1]) == {"a1": "answer one", "a2": "answer two"}
        assert fake_llm.rejected == []
        children = subagent_keys(redis, session.key)
        assert [key.thread_ts.rsplit("-", 1)[1] for key in children] == ["a1", "a2"]
        assert all(state(redis, key) == "idle" for key in children)
        assert session.state() == "idle"
        card = session.notices("progress")[-1].card
        agent_lines = {line.tool_call_id: line for line in card.tools}
        assert [child.name for child in agent_lines["a1"].children] == ["list_dir"]
        assert agent_lines["a1"].state == agent_lines["a2"].state == "done"
        # Nothing was posted outside the parent's thread: sub-agents have no thread of their own.
        posted = fake_slack.state.messages[CHANNEL].values()
        assert {m.get("thread_ts", m["ts"]) for m in posted} == {session.key.thread_ts}
        assert not any("answer one" in t or "answer two" in t for t in session.bot_texts())
    finally:
        stack.stop()


def test_a_parent_waiting_for_its_children_does_not_hold_a_worker(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    agents = Agents()
    two_children(agents)
    fake_llm.default = agents
    stack = start_stack(tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=1)
    try:
        session = Session(redis, fake_slack, PARENT)
        wait_for_answer(session, "parent: both sub-agents answered")
        assert tool_results(agents.of(PARENT)[1]) == {"a1": "answer one", "a2": "answer two"}
        # The parent's turn parked (no turn.ended) and a continuation turn finished it.
        types = [r["type"] for r in session.wire()]
        assert (types.count("turn.prompt"), types.count("turn.ended")) == (2, 1)
    finally:
        stack.stop()


def test_a_background_sub_agent_answers_later_as_input_to_its_parent(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    release = threading.Event()
    agents = Agents()
    agents.add(
        PARENT,
        calls(
            ("b1", "Agent", {"prompt": "BG-CHILD: scan", "description": "scan", "run_in_background": True})
        ),
        text("parent: started the scan"),
        text("parent: the scan reported back"),
    )
    agents.add("BG-CHILD", Reply(text="scan found 3 issues", gate=release))
    fake_llm.default = agents
    stack = start_stack(tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=2)
    try:
        session = Session(redis, fake_slack, PARENT)
        wait_for_answer(session, "parent: started the scan")
        handle = tool_results(agents.of(PARENT)[1])["b1"]
        assert handle.startswith("Sub-agent started in the background.\nagent_id: b1")
        release.set()
        wait_for_answer(session, "parent: the scan reported back")
        last = agents.of(PARENT)[-1]["messages"][-1]
        assert last["role"] == "user" and "scan found 3 issues" in last["content"]
        assert 'agent_id="b1"' in last["content"] and 'status="completed"' in last["content"]
    finally:
        stack.stop()


def test_compaction_is_refused_while_sub_agents_run_and_their_answers_still_reach_the_parent(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    release = threading.Event()
    agents = Agents()
    agents.add(
        PARENT,
        calls(("a1", "Agent", {"prompt": "SLOW-CHILD: look around", "description": "look"})),
        text("parent: the child answered"),
    )
    agents.add("SLOW-CHILD", Reply(text="child: all quiet", gate=release))
    fake_llm.default = agents
    stack = start_stack(tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=2)
    try:
        session = Session(redis, fake_slack, PARENT)
        wait_for(lambda: state(redis, session.key) == "awaiting_agents", what="the parent to wait")
        answer = slash_command(stack, fake_slack, f"compact {link(fake_slack, session.key)}")
        assert answer.startswith("Cannot compact while")
        release.set()
        wait_for_answer(session, "parent: the child answered")
        assert tool_results(agents.of(PARENT)[1]) == {"a1": "child: all quiet"}
        assert not [r for r in session.wire() if "compaction" in r["type"]]
    finally:
        stack.stop()
