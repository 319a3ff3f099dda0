"""shell with SHELL_SANDBOX=off: the command's process group is what a timeout or cancel kills.

The sandboxed shell (the default) is tested in test_shell_sandbox.py and tests/e2e/test_shell_sandbox.py.
"""

import asyncio
import contextlib
import os
import select
import time
from pathlib import Path

import pytest

from agent.tools import CancelSignal, ToolContext, texts
from agent.tools.builtin import Shell
from agent.tools.builtin.shell import ShellParams, safe_environment
from agent.tools.defaults import ABORT_GRACE_MS
from agent.tools.sandbox import UNSANDBOXED, descendants
from tests.agent.tools.helpers import (
    DEADLINE_S,
    call,
    collect,
    executor_with,
    process_alive,
    run_one,
    wait_until,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def executor(tmp_path):
    return executor_with(Shell(sandbox=UNSANDBOXED), workspace=tmp_path)


async def shell(executor, command, **extra):
    return await run_one(executor, call("s", "shell", {"command": command, **extra}))


async def read_pid(path):
    await wait_until(lambda: path.exists() and path.read_text().strip().isdigit())
    return int(path.read_text())


async def test_exit_code_stdout_and_stderr(executor, tmp_path):
    result = await shell(executor, "pwd; echo oops >&2")
    assert result.output == f"exit_code: 0\nstdout:\n{tmp_path.resolve()}\nstderr:\noops"
    assert not result.is_error


async def test_a_failing_command_is_an_error_with_its_exit_code(executor):
    result = await shell(executor, "exit 7")
    assert result.output == "exit_code: 7\nstdout:\n(empty)\nstderr:\n(empty)"
    assert result.is_error


async def test_the_worker_environment_does_not_leak(tmp_path, monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-secret")
    result = await shell(executor_with(Shell(sandbox=UNSANDBOXED), workspace=tmp_path), "env")
    assert "xoxb-secret" not in result.output
    assert "TERM=dumb" in result.output
    assert "SLACK_BOT_TOKEN" not in safe_environment()


async def test_each_stream_is_bounded(tmp_path):
    from agent.tools.builtin.shell import BoundedStream

    stream = BoundedStream(limit=4)
    reader = asyncio.StreamReader()
    reader.feed_data(b"abcdefgh")
    reader.feed_eof()
    await stream.drain(reader)
    assert stream.render("stdout") == "abcd\n[stdout cut: kept the first 4 of 8 bytes]"


async def test_a_timeout_kills_the_command_and_its_children(executor, tmp_path):
    result = await shell(executor, "sleep 60 & echo $! > child.pid; wait", timeout=1)
    assert result.is_error
    assert result.output.startswith("Command timed out after 1 seconds and was killed")
    child = await read_pid(tmp_path / "child.pid")
    await wait_until(lambda: not process_alive(child))


async def test_background_children_do_not_outlive_the_command(executor, tmp_path):
    result = await shell(executor, "sleep 60 & echo $! > child.pid; echo started")
    assert result.output.startswith("exit_code: 0\nstdout:\nstarted")
    child = await read_pid(tmp_path / "child.pid")
    await wait_until(lambda: not process_alive(child))


async def test_cancel_during_a_sleep_kills_the_process_group(executor, tmp_path):
    signal = CancelSignal()
    command = "echo $$ > shell.pid; sleep 60 & echo $! > child.pid; wait"
    batch = asyncio.ensure_future(collect(executor, [call("s", "shell", {"command": command})], signal))
    shell_pid = await read_pid(tmp_path / "shell.pid")
    child_pid = await read_pid(tmp_path / "child.pid")
    assert process_alive(shell_pid) and process_alive(child_pid)
    signal.cancel("user_cancelled")
    (item,) = await asyncio.wait_for(batch, ABORT_GRACE_MS / 1000 + DEADLINE_S)
    assert item.result.output == texts.aborted("shell", "user_cancelled")
    # The group is killed (SIGTERM, then SIGKILL) while the call resolves; on a loaded machine
    # the executor may give up waiting first (ABORT_GRACE_MS), and the orphaned child may still
    # need reaping by init: the polls allow for both, well before the `sleep 60` would end.
    await wait_until(lambda: not process_alive(shell_pid))
    await wait_until(lambda: not process_alive(child_pid))


async def test_a_cancel_while_the_pipes_are_still_connecting_kills_what_the_command_started(tmp_path):
    """The command runs from the moment it is spawned, before asyncio has connected its pipes;
    a cancel then (a loaded loop makes it likely) used to kill only bash, leave the group alive,
    and wait for the orphan to close the pipes it held."""
    shell = Shell(sandbox=UNSANDBOXED)
    os.mkfifo(tmp_path / "started")
    told = os.open(tmp_path / "started", os.O_RDONLY | os.O_NONBLOCK)
    params = ShellParams(command="sleep 60 & echo $! > child.pid; echo > started; wait")
    running = asyncio.ensure_future(shell.run(params, ToolContext(workspace=tmp_path, signal=CancelSignal())))
    deadline = time.monotonic() + DEADLINE_S
    while not _spawned(b"child.pid"):  # one loop pass at a time: the pipes connect over several
        assert time.monotonic() < deadline, "the command was not spawned"
        await asyncio.sleep(0)
    # Holding the loop, as load does, until the command says its child started.
    assert select.select([told], [], [], DEADLINE_S)[0], "the command did not start its child"
    os.close(told)
    child_pid = tmp_path / "child.pid"
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(running, DEADLINE_S)
    child = int(child_pid.read_text())
    await wait_until(lambda: not process_alive(child))


def _spawned(marker: bytes) -> bool:
    """A process of this test's runs a command line holding `marker`."""
    return any(marker in _command_line(pid) for pid in descendants(os.getpid()))


def _command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
