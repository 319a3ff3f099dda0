"""A long session against a provider that refuses requests over its window."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from agent.compaction.prompt import COMPACTION_INSTRUCTION
from agent.loop.ports import CompactionFinished
from agent.loop.turn_loop import LoopConfig
from agent.messages import assistant_message
from agent.testing import FakeLLM, Reply, calls, text
from agent.wire import AppendMessage
from tests.agent.loop.harness import Heard, MemorySink, run_turn
from tests.polling import wait_for

INSTRUCTION_START = COMPACTION_INSTRUCTION.split("\n", 1)[0][:40]


def is_summary_request(body: dict) -> bool:
    last = body["messages"][-1]
    return last["role"] == "user" and INSTRUCTION_START in str(last["content"])


def test_a_long_session_stays_under_the_window_with_pairing_intact(fake_llm: FakeLLM, tmp_path: Path):
    (tmp_path / "big.txt").write_text("line of output that fills the context\n" * 300)  # ~2,800 tokens
    fake_llm.context_window = 12_000
    summaries = []

    def model(body: dict) -> Reply:
        if is_summary_request(body):
            summaries.append(body)
            return text("SUMMARY: read big.txt several times; nothing else happened.")
        step = len(fake_llm.requests)
        if step % 4 == 0:
            return text(f"answer {step}")
        return calls((f"c{step}", "read_file", {"path": "big.txt"}))

    fake_llm.default = model
    sink = MemorySink()
    heard = Heard()
    config = LoopConfig(context_window=12_000, max_steps_per_turn=40)
    for turn in range(6):
        sink.append_user(f"read big.txt again ({turn})")
        outcome = run_turn(
            sink, fake_llm.base_url, tmp_path, config=config, turn_id=f"t{turn}", reporter=heard
        )
        assert outcome.reason == "completed", outcome

    assert fake_llm.rejected == []  # every request was paired and under the window
    finished = [e for e in heard.events if isinstance(e, CompactionFinished)]
    assert any(e.outcome in ("done", "pruned") for e in finished)
    applied = [
        r for r in sink.records if r["type"] in ("context.apply_compaction", "context.prune_tool_results")
    ]
    assert applied and all(r.get("tokens_after", 0) < r.get("tokens_before", 1) for r in applied)


def test_summary_keeps_the_tail_verbatim(fake_llm: FakeLLM, tmp_path: Path):
    (tmp_path / "big.txt").write_text(("x" * 59 + "\n") * 330)  # ~5,000 tokens: pruning alone is not enough
    fake_llm.context_window = 9_000

    def model(body: dict) -> Reply:
        if is_summary_request(body):
            return text("SUMMARY OF EARLIER WORK")
        n = len(fake_llm.requests)
        return calls((f"c{n}", "read_file", {"path": "big.txt"})) if n % 2 else text(f"answer {n}")

    fake_llm.default = model
    sink = MemorySink()
    config = LoopConfig(context_window=9_000)
    for turn in range(3):
        sink.append_user(f"turn {turn}")
        run_turn(sink, fake_llm.base_url, tmp_path, config=config, turn_id=f"t{turn}")
    compactions = [r for r in sink.records if r["type"] == "context.apply_compaction"]
    assert compactions, [r["type"] for r in sink.records]
    history = sink.history()
    assert history[0].origin.kind == "compaction_summary" and "SUMMARY OF EARLIER WORK" in history[0].text()
    # the kept tail is the same wire entries as before: ids all come after the covered range
    record = compactions[-1]
    covered_end = int(record["wire_end"].split("-")[0])
    assert all(int(m.id.split("-")[0].split("/")[0]) > covered_end for m in history[1:] if m.id)
    assert fake_llm.rejected == []


def test_cancel_during_a_summary_ends_the_turn_it_belongs_to(fake_llm: FakeLLM, tmp_path: Path):
    gate = threading.Event()
    fake_llm.script(Reply(text="SUMMARY", gate=gate))
    sink = MemorySink()
    for n in range(6):  # no tool output: only a summary helps
        sink.append_user(f"question {n}: " + "words " * 400)
        sink.record_now(AppendMessage(message=assistant_message(f"answer {n}: " + "words " * 400)), f"a{n}")

    async def cancel_the_summary(loop):
        await asyncio.to_thread(wait_for, lambda: fake_llm.requests, what="the summary request")
        loop.cancel("user_cancelled")
        gate.set()

    config = LoopConfig(context_window=8_000)
    outcome = run_turn(sink, fake_llm.base_url, tmp_path, config=config, during=cancel_the_summary)

    assert outcome.reason == "cancelled" and outcome.steps == 1
    assert "full_compaction.begin" in sink.types() and "context.apply_compaction" not in sink.types()
    cancel = next(r for r in sink.records if r["type"] == "turn.cancel")
    assert cancel["turn_id"] == "t1" and sink.keys["t1:cancel"] == cancel["id"]


def test_a_history_over_the_window_whose_compaction_fails_ends_the_turn_as_failed(
    fake_llm: FakeLLM, tmp_path: Path
):
    """The check before a step cannot compact and the history no longer fits: the turn fails with
    that reason, in the thread's words, rather than crash as an internal error."""
    fake_llm.default = lambda body: Reply(status=400, error={"message": "summaries are disabled here"})
    sink = MemorySink()
    for n in range(3):
        sink.append_user(f"part {n}: " + "words that take room " * 800)  # ~4,000 tokens each
        sink.record_now(AppendMessage(message=assistant_message(f"noted part {n}")), f"answer:{n}")
    sink.append_user("now sum it all up")
    outcome = run_turn(sink, fake_llm.base_url, tmp_path, config=LoopConfig(context_window=9_000))
    assert outcome.reason == "failed"
    assert "no longer fits" in (outcome.error or "") and "HTTP 400" in (outcome.error or "")
    assert (outcome.error or "").count("compaction failed") == 1
