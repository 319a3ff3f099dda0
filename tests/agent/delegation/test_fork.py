"""Fork (context-core.md §6): the compatibility checks (fork-01) and the inherited snapshot."""

from __future__ import annotations

import pytest

from agent.delegation import OwnBinding, fork_incompatibility, fork_prompt, fork_seed, texts
from agent.messages import ToolCall, assistant_message, tool_message, user_message
from agent.projection.inherited import INHERITED_IN_FLIGHT_TOOL_OUTPUT
from tests.vectors import vectors_with_prefix

(FORK_01,) = vectors_with_prefix("fork-01")


@pytest.mark.parametrize(
    ("case", "expected"), list(zip(FORK_01["input"]["cases"], FORK_01["expected"]["results"], strict=True))
)
def test_vector_fork_01(case: dict, expected: str | None):
    own = OwnBinding(case["own"].get("profile_name"), case["own"].get("model_alias"))
    args = case["args"]
    refusal = fork_incompatibility(
        resume=args.get("resume"), subagent_type=args.get("subagent_type"), model=args.get("model"), own=own
    )
    assert refusal == (getattr(texts, expected) if expected else None)


def test_the_reference_texts():
    assert texts.FORK_WITH_RESUME_UNAVAILABLE.startswith(
        "Cannot set resume when forking the current context."
    )
    assert texts.FORK_WITH_TYPE_UNAVAILABLE.startswith("Cannot set a different subagent_type when forking")
    assert texts.FORK_WITH_MODEL_UNAVAILABLE.startswith("Cannot override the model when forking")


def test_the_seed_closes_the_fork_call_and_any_call_still_running():
    fork_call = ToolCall(id="f1", name="Agent", arguments='{"fork":true}')
    slow = ToolCall(id="s1", name="shell", arguments='{"command":"make"}')
    done = ToolCall(id="d1", name="read_file", arguments='{"path":"a"}')
    running = assistant_message("", [done, fork_call, slow]).model_copy(update={"partial": True})
    history = [user_message("go"), running, tool_message("d1", "contents of a")]
    seed = fork_seed(history)
    assert [m.role for m in seed] == ["user", "assistant", "tool", "tool", "tool"]
    assert seed[1].partial is None
    assert [(m.tool_call_id, m.text()) for m in seed[2:]] == [
        ("d1", "contents of a"),
        ("f1", INHERITED_IN_FLIGHT_TOOL_OUTPUT),
        ("s1", INHERITED_IN_FLIGHT_TOOL_OUTPUT),
    ]
    assert history[1].partial is True  # the parent's history is not touched


def test_the_prompt_starts_with_the_one_time_notice():
    assert fork_prompt("check the logs") == f"{texts.FORK_CONTEXT_NOTICE}\n\ncheck the logs"
