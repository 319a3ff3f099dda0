"""A turn told to drain (its worker is restarting) on the real loop, tools and model client:
nothing of an abandoned model call is recorded, a tool within the grace keeps its result, one
past it gets the "worker restarted" result, and the turn ends `handed_back` without `turn.ended`."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from pathlib import Path
from typing import Any

from agent.testing import FakeLLM, calls, text
from tests.agent.loop.harness import MemorySink, run_turn
from tests.polling import wait_for
from tests.sandboxing import host_pids, sleep_marker


def results(sink: MemorySink) -> dict[str, str]:
    return {
        r["event"]["tool_call_id"]: r["event"]["result"]["output"]
        for r in sink.records
        if r.get("event", {}).get("type") == "tool.result"
    }


def shell_turn(fake_llm: FakeLLM, command: str) -> MemorySink:
    """A turn whose model asks for `command` in a shell, its session holding one request."""
    fake_llm.script(calls(("c1", "shell", {"command": command, "timeout": 60})))
    sink = MemorySink()
    sink.append_user("build it")
    return sink


async def until_running(marker: str) -> None:
    await asyncio.to_thread(wait_for, lambda: host_pids(marker), what="the shell to start")


def test_a_drain_during_the_model_call_records_nothing_of_it(fake_llm: FakeLLM, tmp_path: Path):
    held = threading.Event()
    fake_llm.default = lambda body: (held.wait(30), text("too late"))[1]
    sink = MemorySink()
    sink.append_user("build it")
    before = len(sink.records)

    async def drain_when_asked(loop: Any) -> None:
        await asyncio.to_thread(wait_for, lambda: fake_llm.requests, what="the model to be asked")
        loop.drain(30)

    try:
        outcome = run_turn(sink, fake_llm.base_url, tmp_path, during=drain_when_asked)
    finally:
        held.set()
    assert outcome.reason == "handed_back"
    assert len(sink.records) == before  # no step, no cancel, no turn.ended


def test_a_tool_within_the_grace_keeps_its_result_and_the_turn_asks_nothing_more(
    fake_llm: FakeLLM, tmp_path: Path
):
    marker = sleep_marker()
    sink = shell_turn(fake_llm, f"sleep {marker} & wait; echo built")

    async def drain_then_let_it_end(loop: Any) -> None:
        await until_running(marker)
        loop.drain(30)
        for pid in host_pids(marker):  # the command ends inside the grace
            os.kill(pid, signal.SIGTERM)

    outcome = run_turn(sink, fake_llm.base_url, tmp_path, during=drain_then_let_it_end)
    assert outcome.reason == "handed_back" and len(fake_llm.requests) == 1
    assert "built" in results(sink)["c1"]
    assert sink.types()[-1] == "step.end" and "turn.ended" not in sink.types()


def test_a_tool_past_the_grace_is_stopped_with_the_restart_result(fake_llm: FakeLLM, tmp_path: Path):
    marker = sleep_marker()
    sink = shell_turn(fake_llm, f"sleep {marker}")

    async def drain_while_running(loop: Any) -> None:
        await until_running(marker)
        loop.drain(0.5)

    outcome = run_turn(sink, fake_llm.base_url, tmp_path, during=drain_while_running)
    assert outcome.reason == "handed_back" and len(fake_llm.requests) == 1
    wait_for(lambda: not host_pids(marker), timeout=5, what="the command to be gone")
    assert results(sink)["c1"].startswith('Tool "shell" was stopped after 0.5 s because the worker restarted')
    assert "turn.cancel" not in sink.types() and "turn.ended" not in sink.types()


def test_a_cancel_before_the_drain_still_ends_the_turn_cancelled(fake_llm: FakeLLM, tmp_path: Path):
    marker = sleep_marker()
    sink = shell_turn(fake_llm, f"sleep {marker}")

    async def cancel_then_drain(loop: Any) -> None:
        await until_running(marker)
        loop.cancel("user_cancelled")
        loop.drain(30)

    outcome = run_turn(sink, fake_llm.base_url, tmp_path, during=cancel_then_drain)
    assert outcome.reason == "cancelled" and sink.types()[-2:] == ["turn.cancel", "turn.ended"]
