"""AgentSwarm and fork on real workers: item order, a failing item, bounded concurrency, and the
inherited snapshot a fork starts from."""

from __future__ import annotations

from pathlib import Path

from agent.delegation import texts
from agent.projection.inherited import INHERITED_IN_FLIGHT_TOOL_OUTPUT
from agent.testing import FakeLLM, Reply, calls, text
from jobs.session.store import SessionStore
from tests.e2e.agents import Agents, content_text, start_stack, subagent_keys, tool_results, wait_for_answer
from tests.e2e.turns import Session

FORK = {"fork": True}
ITEMS = ["alpha", "beta", "gamma", "delta", "epsilon"]
FORBIDDEN = Reply(status=403, error={"error": {"message": "model access revoked", "type": "permission"}})


def turn_span(redis, key) -> tuple[int, int]:
    """When the sub-agent's (only) turn started and ended, in ms, from its own records."""
    wire = SessionStore(redis, key).read_wire()
    start = next(r["time"] for r in wire if r["type"] == "turn.prompt")
    end = next(r["time"] for r in wire if r["type"] == "turn.ended")
    return start, end


def test_a_swarm_of_five_with_one_failing_item(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    agents = Agents()
    agents.add(
        "SWARM-PARENT",
        calls(("s1", "AgentSwarm", {
            "description": "describe the Greek letters",
            "prompt_template": "SWARM-ITEM {{item}}: describe it",
            "items": ITEMS,
        })),
        text("parent: the swarm is done"),
    )  # fmt: skip
    for item in ITEMS:
        agents.add(f"SWARM-ITEM {item}:", FORBIDDEN if item == "gamma" else text(f"{item} described"))
    fake_llm.default = agents
    stack = start_stack(
        tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=3, AGENT_SWARM_MAX_CONCURRENCY="2"
    )
    try:
        session = Session(redis, fake_slack, "SWARM-PARENT")
        wait_for_answer(session, "parent: the swarm is done")
        result = tool_results(agents.of("SWARM-PARENT")[1])["s1"]
        lines = result.split("\n")
        assert lines[0] == 'Swarm "describe the Greek letters": 5 items, 4 succeeded, 1 failed.'
        headers = [line for line in lines if line.startswith("[")]
        assert headers == [
            "[1/5] alpha", "[2/5] beta", "[3/5] gamma (failed)", "[4/5] delta", "[5/5] epsilon",
        ]  # fmt: skip
        for item in ("alpha", "beta", "delta", "epsilon"):
            assert f"] {item}\n{item} described" in result
        assert 'Sub-agent "gamma" failed: the model endpoint failed (ModelHTTPError' in result
        spans = sorted(turn_span(redis, key) for key in subagent_keys(redis, session.key))
        assert len(spans) == 5
        running_at_each_start = [sum(1 for s, e in spans if s <= start < e) for start, _ in spans]
        assert max(running_at_each_start) <= 2  # AGENT_SWARM_MAX_CONCURRENCY
        card = session.notices("progress")[-1].card
        (swarm_line,) = card.tools
        assert [(c.summary, c.state) for c in swarm_line.children] == [
            ("alpha", "done"), ("beta", "done"), ("gamma", "failed"), ("delta", "done"), ("epsilon", "done"),
        ]  # fmt: skip
    finally:
        stack.stop()


def test_a_fork_starts_from_the_inherited_snapshot(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    agents = Agents()
    agents.add(
        "FORK-PARENT",
        calls(
            ("sh1", "shell", {"command": "sleep 1; echo built"}),
            ("f1", "Agent", {"prompt": "FORK-TASK: review what I did", "description": "review", **FORK}),
        ),
        text("parent: reviewed"),
    )
    agents.add("FORK-TASK", text("the fork's review"))
    fake_llm.default = agents
    stack = start_stack(tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=2)
    try:
        session = Session(redis, fake_slack, "FORK-PARENT")
        wait_for_answer(session, "parent: reviewed")
        first = agents.of("FORK-TASK")[0]["messages"]
        assert [m["role"] for m in first[-4:]] == ["assistant", "tool", "tool", "user"]
        assert [call["id"] for call in first[-4]["tool_calls"]] == ["sh1", "f1"]
        assert [(m["tool_call_id"], content_text(m)) for m in first[-3:-1]] == [
            ("sh1", INHERITED_IN_FLIGHT_TOOL_OUTPUT),
            ("f1", INHERITED_IN_FLIGHT_TOOL_OUTPUT),
        ]
        assert content_text(first[-1]) == f"{texts.FORK_CONTEXT_NOTICE}\n\nFORK-TASK: review what I did"
        assert first[0]["role"] == "system" and "FORK-PARENT" in content_text(first[1])  # inherited
        results = tool_results(agents.of("FORK-PARENT")[1])
        assert results["f1"] == "the fork's review" and "built" in results["sh1"]
    finally:
        stack.stop()
