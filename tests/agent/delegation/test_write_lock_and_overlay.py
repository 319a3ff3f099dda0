"""The per-turn tool overlay and the write-lock wrapper (the lock itself is tested on Redis)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path

from agent.messages import ToolCall
from agent.tools.accesses import ALL, AllAccess, FileAccess
from agent.tools.builtin import builtin_tools
from agent.tools.executor import ToolExecutor
from agent.tools.overlay import ToolOverlay
from agent.tools.registry import ToolRegistry, openai_tool_declarations
from agent.tools.write_lock import LockedTool, writes_of


class RecordingLock:
    def __init__(self) -> None:
        self.held: list[tuple] = []

    @contextlib.asynccontextmanager
    async def hold(self, writes: Sequence):
        self.held.append(tuple(writes))
        yield


def test_writes_of_keeps_writes_and_all():
    read, write = FileAccess("read", "/w/a"), FileAccess("readwrite", "/w/b")
    assert writes_of([read, write]) == (write,)
    assert writes_of(None) == ALL
    assert writes_of([read]) == ()
    assert writes_of([AllAccess()]) == (AllAccess(),)


def test_locked_tools_hold_the_lock_for_writes_only(tmp_path: Path):
    lock = RecordingLock()
    base = ToolRegistry(builtin_tools())
    overlay = ToolOverlay(base, hidden={"http_get"}, wrap=lambda tool: LockedTool(tool, lock))
    assert "http_get" not in overlay.names and overlay.validator("read_file") is base.validator("read_file")
    assert [d["function"]["name"] for d in openai_tool_declarations(overlay)] == overlay.names
    (tmp_path / "a.txt").write_text("x")
    calls = [
        ToolCall(id="r", name="read_file", arguments='{"path": "a.txt"}'),
        ToolCall(id="w", name="write_file", arguments='{"path": "b.txt", "content": "y"}'),
        ToolCall(id="h", name="http_get", arguments='{"url": "http://x"}'),
    ]

    async def run() -> dict[str, str]:
        executor = ToolExecutor(overlay, workspace=tmp_path)
        return {call_id: result.text() async for call_id, _, result in executor.execute(calls)}

    results = asyncio.run(run())
    assert (tmp_path / "b.txt").read_text() == "y"
    assert results["h"] == 'Tool "http_get" not found'
    assert lock.held == [(FileAccess("write", str(tmp_path / "b.txt")),)]


def test_bound_tools_must_replace_registered_ones():
    base = ToolRegistry(builtin_tools())
    try:
        ToolOverlay(base, bound={"nope": builtin_tools()[0]})
    except ValueError as error:
        assert "nope" in str(error)
    else:
        raise AssertionError("an unknown bound tool was accepted")
