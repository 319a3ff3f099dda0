"""The sandboxed shell on the real bwrap, and the command line it builds.

The end-to-end escapes (through a worker) are in tests/e2e/test_shell_sandbox.py; these pin the
parts a worker hides: argument order, the empty environment bwrap starts with, the graceful
SIGTERM before the namespace is torn down, the probe and the reachability check.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from agent.tools import CancelSignal, texts
from agent.tools.builtin import Shell, WriteFile
from agent.tools.defaults import ABORT_GRACE_MS
from agent.tools.sandbox import SandboxConfig, SandboxLimits, launch, sandbox_problem, workspace_problem
from tests.agent.tools.helpers import DEADLINE_S, call, collect, executor_with, run_one, wait_until
from tests.sandboxing import give_to_sandbox, host_pids, sleep_marker

pytestmark = pytest.mark.anyio
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the uid switch happens only for a root worker")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return give_to_sandbox(path)


async def shell(workspace: Path, command: str, config: SandboxConfig | None = None, **extra):
    executor = executor_with(Shell(sandbox=config or SandboxConfig()), workspace=workspace)
    return await run_one(executor, call("s", "shell", {"command": command, **extra}))


def argv_of(config: SandboxConfig, workspace: Path | None = Path("/srv/ws/T/C/1.2")) -> list[str]:
    return launch(config, "make test", workspace, {"LANG": "de_DE.UTF-8", "SECRET": "x"}).argv


def test_no_network_and_no_resolver_unless_the_channel_allows_it():
    closed, open_ = argv_of(SandboxConfig()), argv_of(SandboxConfig(network=True))
    assert "--unshare-all" in closed and "--share-net" not in closed
    assert "/etc/resolv.conf" not in closed
    assert "--share-net" in open_ and "/etc/resolv.conf" in open_


def test_bwrap_starts_with_an_empty_environment_and_gives_the_command_a_small_one():
    started = launch(SandboxConfig(), "env", Path("/srv/ws"), {"LANG": "de_DE.UTF-8", "SLACK_BOT_TOKEN": "x"})
    assert started.environment == {}
    argv = started.argv
    given = {argv[i + 1]: argv[i + 2] for i, arg in enumerate(argv) if arg == "--setenv"}
    assert given == {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
                     "TERM": "dumb", "LANG": "de_DE.UTF-8"}  # fmt: skip
    assert argv.index("--clearenv") < argv.index("--setenv")


def test_the_workspace_is_bound_after_the_private_tmp_and_before_the_root_goes_read_only():
    argv = argv_of(SandboxConfig(limits=SandboxLimits(memory_mb=64)))
    bind = argv.index("--bind")
    assert argv[bind + 1 : bind + 3] == ["/srv/ws/T/C/1.2", "/srv/ws/T/C/1.2"]
    assert argv.index("/tmp") < bind < argv.index("--remount-ro")
    assert argv[argv.index("--tmpfs") - 1] == str(64 * 1024 * 1024)  # /tmp is capped
    assert argv[argv.index("--chdir") + 1] == "/srv/ws/T/C/1.2"


def test_limits_are_passed_in_bashs_units_and_the_command_verbatim():
    limits = SandboxLimits(cpu_seconds=7, memory_mb=100, processes=9, file_size_mb=3)
    argv = argv_of(SandboxConfig(limits=limits))
    assert argv[-6:] == ["threadline-limits", "7", str(100 * 1024), "9", str(3 * 1024), "make test"]


def test_a_missing_bwrap_is_a_problem_naming_it(tmp_path: Path):
    problem = sandbox_problem(SandboxConfig(bwrap=str(tmp_path / "nope")))
    assert problem is not None and "bubblewrap is not installed" in problem and "nope" in problem
    assert sandbox_problem(SandboxConfig(enabled=False, bwrap=str(tmp_path / "nope"))) is None
    refused = Shell(sandbox=SandboxConfig(bwrap=str(tmp_path / "nope"))).unavailable_reason()
    assert refused is not None and "SHELL_SANDBOX=off (unsafe" in refused


@ROOT_ONLY
def test_a_workspace_the_sandbox_uid_cannot_reach_is_named_with_its_closed_directory(tmp_path: Path):
    closed = tmp_path / "closed"
    (closed / "ws").mkdir(parents=True)
    closed.chmod(0o700)
    problem = workspace_problem(SandboxConfig(), closed / "ws")
    assert problem is not None and f"{closed} is not searchable" in problem
    assert workspace_problem(SandboxConfig(enabled=False), closed / "ws") is None


async def test_the_command_runs_in_the_workspace_as_the_sandbox_user(workspace: Path):
    command = "pwd; id -u; echo hi > note.txt; tr '\\0' ' ' < /proc/1/cmdline; echo; touch /rootfile 2>&1; :"
    result = await shell(workspace, command)
    assert "cannot touch '/rootfile': Read-only file system" in result.output  # the sandbox's own root
    lines = result.output.splitlines()
    uid = 65534 if os.geteuid() == 0 else os.getuid()
    assert lines[:4] == ["exit_code: 0", "stdout:", str(workspace), str(uid)]
    assert "bwrap" in lines[4]  # pid 1 is bwrap's own init: its own PID namespace
    assert (workspace / "note.txt").read_text() == "hi\n"


async def test_a_timeout_sends_sigterm_first_then_tears_everything_down(workspace: Path):
    sleep = sleep_marker()
    command = f"trap 'echo terminated > term.txt; exit 3' TERM; setsid sleep {sleep} & wait"
    result = await shell(workspace, command, timeout=1)
    assert result.output.startswith("Command timed out after 1 seconds")
    assert (workspace / "term.txt").read_text() == "terminated\n"  # the command could clean up
    await wait_until(lambda: not host_pids(sleep))


async def test_a_cancel_leaves_nothing_of_the_sandbox(workspace: Path):
    sleep = sleep_marker()
    signal = CancelSignal()
    executor = executor_with(Shell(), workspace=workspace)
    command = f"(setsid sleep {sleep} &); sleep {sleep}"
    batch = asyncio.ensure_future(collect(executor, [call("s", "shell", {"command": command})], signal))
    await wait_until(lambda: len(host_pids(sleep)) == 2)
    signal.cancel("user_cancelled")
    (item,) = await asyncio.wait_for(batch, ABORT_GRACE_MS / 1000 + DEADLINE_S)
    assert item.result.output == texts.aborted("shell", "user_cancelled")
    await wait_until(lambda: not host_pids(sleep))


@ROOT_ONLY
async def test_what_the_file_tools_create_stays_changeable_by_the_sandboxed_shell(workspace: Path):
    executor = executor_with(Shell(), WriteFile(), workspace=workspace)
    module = {"path": "src/pkg/mod.py", "content": "x = 1\n"}
    written = await run_one(executor, call("w", "write_file", module))
    assert not written.is_error
    spilled = await run_one(executor, call("s", "shell", {"command": "head -c 60000 /dev/zero | tr '\\0' a"}))
    assert ".threadline/tool-results/" in spilled.text()  # a spill file the worker wrote
    changed = await run_one(
        executor,
        call("c", "shell", {"command": "echo y = 2 >> src/pkg/mod.py && touch src/pkg/new.py && "
                                       "rm -r .threadline/tool-results && echo changed"}),
    )  # fmt: skip
    assert "changed" in changed.text(), changed.text()
    assert (workspace / "src/pkg/mod.py").read_text() == "x = 1\ny = 2\n"
