"""A thinking provider (DeepSeek's thinking mode) through the real loop: the reasoning it sent,
empty included, survives the wire log, the fold and the projection, and goes back with its
tool calls, in the turn and in later turns."""

from __future__ import annotations

from pathlib import Path

from agent.testing import FakeLLM, Reply, calls, text
from tests.agent.loop.harness import MemorySink, run_turn


def test_empty_and_real_reasoning_go_back_with_their_tool_calls_across_turns(tmp_path: Path):
    fake = FakeLLM(thinking=True).start()
    try:
        fake.script(
            calls(("c1", "list_dir", {"path": "."})),  # reasoning "" (the fake's default when thinking)
            Reply(tool_calls=[("c2", "list_dir", '{"path": "."}')], reasoning="look again"),
            Reply(text="nothing here", reasoning="done"),
            text("still nothing"),
        )
        sink = MemorySink()
        sink.append_user("what is here?")
        assert run_turn(sink, fake.base_url, tmp_path).answer == "nothing here"
        sink.append_user("and now?")
        assert run_turn(sink, fake.base_url, tmp_path, turn_id="t2").answer == "still nothing"
        assert fake.rejected == []
        later = [m for m in fake.accepted()[-1]["messages"] if m["role"] == "assistant"]
        assert [m.get("reasoning_content") for m in later] == ["", "look again", None]
    finally:
        fake.stop()
