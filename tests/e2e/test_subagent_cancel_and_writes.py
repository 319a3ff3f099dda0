"""Cancelling a parent stops its sub-agents; sub-agents writing one file never interleave."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from agent.testing import FakeLLM, Reply, calls, text
from agent.tools import texts
from jobs.control import cancel
from jobs.delegation.write_lock import RedisWriteLock
from jobs.keys import cancel_key
from jobs.session.store import SessionStore
from jobs.turn.workspace import workspace_path
from tests.e2e.agents import Agents, start_stack, state, subagent_keys, wait_for_answer
from tests.e2e.turns import Session
from tests.polling import wait_for
from tests.sandboxing import host_pids, sleep_marker


def test_cancelling_a_parent_stops_its_sub_agents_and_their_tools(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    sleep = sleep_marker()
    never = threading.Event()  # the second sub-agent's model call is answered only after the test
    agents = Agents()
    agents.add(
        "CANCEL-PARENT",
        calls(
            ("a1", "Agent", {"prompt": "LONG-ONE: build", "description": "build"}),
            ("a2", "Agent", {"prompt": "LONG-TWO: think", "description": "think"}),
        ),
        text("parent: this must never be asked for"),
    )
    command = f"sleep {sleep}"
    agents.add("LONG-ONE", calls(("sh", "shell", {"command": command, "timeout": 120})), text("built"))
    agents.add("LONG-TWO", Reply(text="thought", gate=never))
    fake_llm.default = agents
    stack = start_stack(tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=3)
    try:
        session = Session(redis, fake_slack, "CANCEL-PARENT")
        wait_for(lambda: host_pids(sleep) and agents.of("LONG-TWO"), timeout=30, what="both sub-agents")
        assert session.state() == "awaiting_agents"
        assert cancel(redis, session.key, by="W222").ok

        children = subagent_keys(redis, session.key)
        states = lambda: [state(redis, k) for k in children]  # noqa: E731
        try:
            wait_for(lambda: states() == ["cancelled"] * 2, what="both children")
        except AssertionError:  # which child, and how far its cancel got (a rare CI failure)
            flags = [redis.get(cancel_key(k)) for k in children]
            asked = [SessionStore(redis, k).meta.read().cancel_at for k in children]
            raise AssertionError(
                f"children {children}: states {states()}, flags {flags}, asked {asked}"
            ) from None
        wait_for(lambda: not host_pids(sleep), timeout=15, what="the command to die")
        assert session.state() == "cancelled"
        wait_for(lambda: any(t.startswith("Stopped by <@W222>") for t in session.bot_texts()), what="notice")
        closed = {m.tool_call_id: m.text() for m in session.history() if m.role == "tool"}
        assert closed == {call: texts.aborted("Agent", "user_cancelled") for call in ("a1", "a2")}
        assert len(agents.of("CANCEL-PARENT")) == 1  # no continuation asked the model again
        assert session.notices("progress")[-1].card.state == "cancelled"
    finally:
        never.set()
        stack.stop()


def test_two_sub_agents_writing_one_file_never_interleave(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    agents = Agents()
    agents.add(
        "WRITE-PARENT",
        calls(
            ("w1", "Agent", {"prompt": "WRITER-A: append your lines", "description": "writer a"}),
            ("w2", "Agent", {"prompt": "WRITER-B: append your lines", "description": "writer b"}),
        ),
        text("parent: both wrote"),
    )
    both_asked = threading.Barrier(2, timeout=30)  # both commands are asked for at the same moment

    def together(reply: Reply) -> Callable[[dict], Reply]:
        def answer(body: dict) -> Reply:
            both_asked.wait()
            return reply

        return answer

    for tag in ("A", "B"):
        command = f"for i in 1 2 3 4 5 6; do echo {tag}$i >> shared.txt; sleep 0.05; done"
        first = together(calls((f"s{tag}", "shell", {"command": command})))
        agents.add(f"WRITER-{tag}", first, text(f"{tag} done"))
    fake_llm.default = agents
    stack = start_stack(tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=3)
    try:
        session = Session(redis, fake_slack, "WRITE-PARENT")
        wait_for_answer(session, "parent: both wrote")
        workspace = workspace_path(stack_settings(tmp_path), session.key)
        lines = (workspace / "shared.txt").read_text().split()
        assert sorted(lines) == [f"{t}{i}" for t in "AB" for i in range(1, 7)]
        assert lines in ([f"A{i}" for i in range(1, 7)] + [f"B{i}" for i in range(1, 7)],
                         [f"B{i}" for i in range(1, 7)] + [f"A{i}" for i in range(1, 7)])  # fmt: skip
        assert RedisWriteLock(redis, workspace).holders() == {}
    finally:
        stack.stop()


def stack_settings(tmp_path: Path):
    from jobs.settings import Settings

    return Settings(AGENT_WORKDIR=tmp_path / "workspaces")
