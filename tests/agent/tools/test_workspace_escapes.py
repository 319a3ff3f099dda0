"""Escapes from the workspace tried as a hostile agent would: through the real tools, with the
links, swaps and special files made by the real sandboxed shell (bubblewrap, as uid 65534).

Only the tools' public surface is used (tools, executor, ToolContext), so the same probes can
be run against an older tree to see them fail (the closing note of issue 29 says which did).
"""

from __future__ import annotations

import asyncio
import os
import time
import tracemalloc
from pathlib import Path

import pytest

from agent.tools import CancelSignal
from agent.tools.base import ToolContext, ToolResult
from agent.tools.builtin import Glob, Grep, ListDir, ReadFile, Shell
from agent.tools.sandbox import SandboxConfig, sandbox_problem
from tests.agent.tools.helpers import call, collect, executor_with
from tests.sandboxing import give_to_sandbox

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        os.geteuid() != 0, reason="the outside directory is root-only: the probe needs a root worker"
    ),
    pytest.mark.skipif(sandbox_problem(SandboxConfig()) is not None, reason="needs bubblewrap"),
]
SECRET = "SECRET-outside-the-workspace"
RACE_S = 20.0


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A root-only directory beside the workspace, holding a file the agent must never see."""
    path = tmp_path / "root-only"
    path.mkdir(mode=0o700)
    (path / "f").write_text(SECRET + "\n")
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return give_to_sandbox(path)


async def sandboxed(workspace: Path, command: str, timeout: int = 60) -> ToolResult:
    """The command run by the real shell tool in bubblewrap, as uid 65534 (no test deadline but
    the command's own `timeout`: the swap race runs longer than the helpers' deadline)."""
    executor = executor_with(Shell(sandbox=SandboxConfig()), workspace=workspace)
    calls = [call("s", "shell", {"command": command, "timeout": timeout})]
    (item,) = [item async for item in executor.execute(calls)]
    return item.result


def context(workspace: Path, signal: CancelSignal | None = None) -> ToolContext:
    return ToolContext(
        workspace=workspace, signal=signal or CancelSignal(), tool_call_id="t", tool_name="probe"
    )


async def test_output_spilled_through_a_link_the_shell_planted_lands_nowhere_outside(workspace, outside):
    planted = await sandboxed(workspace, f"mkdir -p .threadline && ln -s {outside} .threadline/tool-results")
    assert not planted.is_error, planted.output
    before = sorted(os.listdir(outside))
    long = await sandboxed(workspace, "head -c 60000 /dev/zero | tr '\\0' x")
    assert sorted(os.listdir(outside)) == before
    assert "could not be saved to a file" in long.output


async def test_the_swap_race_never_reads_lists_or_finds_outside(workspace, outside):
    """The shell swaps `d` between a directory of the workspace and a link out, as fast as it can,
    for RACE_S; the file tools read, list, grep and glob `d` the whole time."""
    swapper = asyncio.ensure_future(
        sandboxed(
            workspace,
            f"mkdir real && echo inside > real/f && end=$(( $(date +%s) + {int(RACE_S) + 2} )); "
            f"while [ $(date +%s) -lt $end ]; do mv -T real d; mv -T d real; ln -s {outside} d; rm d; done",
            timeout=int(RACE_S) + 30,
        )
    )
    tools = [
        (ReadFile(), ReadFile.parameters(path="d/f")),
        (ListDir(), ListDir.parameters(path="d")),
        (Grep(), Grep.parameters(pattern="SECRET", path="d")),
        (Glob(), Glob.parameters(pattern="*", path="d")),
    ]
    seen_inside = tries = 0
    end = time.monotonic() + RACE_S
    while time.monotonic() < end:
        tool, args = tools[tries % len(tools)]
        tries += 1
        try:
            result = await tool.run(args, context(workspace))  # type: ignore[attr-defined]
        except Exception as error:  # a refusal or "not found": the race made it so, and that is fine
            text = str(error)
        else:
            text = result.text()
        assert SECRET not in text and "root-only" not in text, f"after {tries} tries: {text}"
        seen_inside += "inside" in text
    assert not (await swapper).is_error
    assert seen_inside > 0, "the race never let a read in: the probe proved nothing"


async def test_a_fifo_a_socket_and_a_device_are_refused_and_nothing_blocks(workspace):
    made = await sandboxed(
        workspace,
        "mkfifo pipe && ln -s /dev/zero zero && ln -s /dev/tty tty && "
        "python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")' ; echo text > plain",
    )
    assert not made.is_error, made.output
    executor = executor_with(ReadFile(), Grep(), ListDir(), workspace=workspace)
    calls = [call(name, "read_file", {"path": name}) for name in ["pipe", "zero", "tty", "sock"]]
    calls.append(call("grep", "grep", {"pattern": "text"}))
    results = {
        item.tool_call_id: item.result for item in await asyncio.wait_for(collect(executor, calls), 10)
    }
    assert "pipe is a FIFO" in results["pipe"].output
    for link in ["zero", "tty"]:
        assert "outside the session workspace" in results[link].output
    if (workspace / "sock").exists():
        assert results["sock"].is_error
    assert results["grep"].output == "plain:1:text"


async def test_a_200_mib_one_line_file_is_read_a_page_at_a_time(workspace):
    made = await sandboxed(workspace, "head -c 209715200 /dev/zero | tr '\\0' a > big")
    assert not made.is_error, made.output
    tracemalloc.start()
    try:
        result = await ReadFile().run(ReadFile.parameters(path="big"), context(workspace))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.text().startswith("     1\taaaa") and result.text().endswith("[...truncated]")
    assert peak < 16 * 1024 * 1024, f"reading cost {peak:,} bytes"


async def test_nine_globstars_are_one(workspace):
    made = await sandboxed(
        workspace, "mkdir -p $(printf 'a/%.0s' $(seq 40)) && touch $(printf 'a/%.0s' $(seq 40))b"
    )
    assert not made.is_error, made.output
    nine = "/".join(["**"] * 9) + "/b"
    found = await asyncio.wait_for(Glob().run(Glob.parameters(pattern=nine), context(workspace)), 10)
    assert found.text() == "/".join(["a"] * 40) + "/b"


@pytest.fixture
def wide(workspace: Path) -> Path:
    """100,000 files: a walk of some tenths of a second here."""
    for directory in range(100):
        (workspace / f"d{directory}").mkdir()
        for name in range(1000):
            (workspace / f"d{directory}" / f"f{name}").touch()
    return workspace


async def test_a_glob_over_too_large_a_tree_ends_at_its_limit(wide):
    with pytest.raises(Exception, match=r"was still walking after 0\.001 s"):
        await Glob(time_limit_s=0.001).run(Glob.parameters(pattern="**/x*"), context(wide))


async def test_stop_ends_a_running_glob(wide):
    signal = CancelSignal()
    asyncio.get_running_loop().call_soon(signal.cancel, "cancelled")  # once the walk has its thread
    with pytest.raises(Exception, match="glob was stopped"):
        await Glob(time_limit_s=60).run(Glob.parameters(pattern="**/x*"), context(wide, signal))
