"""Stop reaches a grep running in the CPU pool's processes, not only the turn that waits for it."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from agent.offload import process_lane
from agent.tools import CancelSignal
from agent.tools.base import ToolContext
from agent.tools.builtin import Grep

pytestmark = pytest.mark.anyio
FILES = 40


@pytest.fixture
def long_search(tmp_path: Path) -> Path:
    """40 names for one file of 350,000 short lines (under GREP_MAX_FILE_BYTES): a search of many
    seconds, made in a moment."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "f0").write_text("no match here\n" * 350_000)
    for index in range(1, FILES):
        os.link(workspace / "f0", workspace / f"f{index}")
    return workspace


def context(workspace: Path, signal: CancelSignal) -> ToolContext:
    return ToolContext(workspace=workspace, signal=signal, tool_call_id="g", tool_name="grep")


async def test_stopped_searches_free_the_pool_for_the_next_one(long_search: Path):
    pool_size = process_lane()._max_workers
    signals = [CancelSignal() for _ in range(pool_size)]
    searches = [
        asyncio.ensure_future(
            Grep(time_limit_s=120).run(Grep.parameters(pattern="nowhere"), context(long_search, s))
        )
        for s in signals
    ]
    done, _ = await asyncio.wait(searches, timeout=1)
    assert not done, "a search ended before it could be stopped: the probe proved nothing"
    for signal in signals:
        signal.cancel("cancelled")
    for search in searches:
        with pytest.raises(Exception, match="grep was stopped"):
            await asyncio.wait_for(search, 10)
    (long_search / "small").write_text("needle\n")
    quick = Grep().run(Grep.parameters(pattern="needle", path="small"), context(long_search, CancelSignal()))
    assert (await asyncio.wait_for(quick, 10)).text() == "small:1:needle"
