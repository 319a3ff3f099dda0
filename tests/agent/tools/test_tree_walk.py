"""The tree walk glob and grep use (agent.tools.tree_walk): what the agent's shell swaps in while
a directory is being listed is skipped, never followed or waited on."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.tools import CancelSignal
from agent.tools.base import ToolContext
from agent.tools.builtin import Glob
from agent.tools.tree_walk import MAX_WALK_DEPTH, walk


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "a").mkdir(parents=True)
    (root / "a" / "inside.txt").write_text("in")
    (root / "b").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("out")
    return root


def walked(root: Path, between=None) -> list[tuple[str, list[str], list[str]]]:
    """What the walk lists; `between(level)` runs while the caller holds each level."""
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    seen = []
    try:
        for level in walk(top):
            seen.append((level.path, list(level.directories), list(level.others)))
            if between is not None:
                between(level)
    finally:
        os.close(top)
    return seen


def test_it_lists_every_directory_depth_first_in_name_order(tree: Path):
    assert walked(tree) == [("", ["a", "b"], []), ("a/", [], ["inside.txt"]), ("b/", [], [])]


@pytest.mark.parametrize("swap", ["link out", "fifo", "file"])
def test_a_directory_swapped_after_it_was_listed_is_skipped(tree: Path, swap: str):
    def swap_b(level) -> None:
        if level.path != "":
            return
        os.rmdir(tree / "b")
        if swap == "link out":
            os.symlink(tree.parent / "outside", tree / "b")
        elif swap == "fifo":
            os.mkfifo(tree / "b")  # os.fwalk opened it without O_NONBLOCK and waited for ever
        else:
            (tree / "b").write_text("now a file")

    seen = walked(tree, swap_b)
    assert [path for path, _, _ in seen] == ["", "a/"]
    assert not any("secret.txt" in others for _, _, others in seen)


def test_a_walk_stopped_early_closes_what_it_held(tree: Path):
    before = len(os.listdir("/proc/self/fd"))
    top = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    levels = walk(top)
    next(levels)
    next(levels)
    levels.close()
    os.close(top)
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.fixture
def deep(tmp_path: Path) -> Iterator[Path]:
    """1,500 directories deep, made and removed with mkdir and rm: os.makedirs and shutil.rmtree
    (pytest's own clean-up of old temporary directories too) recurse once per level and fail."""
    root = tmp_path / "deep"
    subprocess.run(["mkdir", "-p", str(root / ("d/" * 1500))], check=True)
    yield root
    subprocess.run(["rm", "-rf", str(root)], check=True)


@pytest.mark.anyio
async def test_a_tree_deeper_than_the_walk_goes_is_globbed_without_crashing(deep: Path):
    """os.fwalk recursed once per level: 1,500 levels raised RecursionError."""
    (deep / ("d/" * 10) / "found.txt").write_text("")
    context = ToolContext(workspace=deep, signal=CancelSignal(), tool_call_id="g", tool_name="glob")
    result = await asyncio.wait_for(Glob().run(Glob.parameters(pattern="**/found.txt"), context), 30)
    assert result.text() == "d/" * 10 + "found.txt"
    assert MAX_WALK_DEPTH < 1500


@pytest.fixture
def anyio_backend():
    return "asyncio"
