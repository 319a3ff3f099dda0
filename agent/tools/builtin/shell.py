"""shell: run a command in the session workspace, inside the OS sandbox (agent/tools/sandbox).

The command runs under `bash -c` in bubblewrap: its own namespaces, the workspace as the only
writable path, no network unless the caller allows it, rlimits. When it ends, times out or is
cancelled, nothing it started survives: bwrap's PID namespace dies with it. A timeout or a
cancel sends SIGTERM to every process in the sandbox, then SIGKILL to bwrap after a short
grace, which takes the whole namespace down. When the sandbox cannot be set up, the tool is
unavailable with the operator's fix; only an explicit `SandboxConfig(enabled=False)` runs the
command bare, in its own process group, with the same TERM-then-KILL of the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from agent.tools.base import Tool, ToolContext, ToolResult, error_result
from agent.tools.builtin.common import Params
from agent.tools.defaults import (
    SHELL_DEFAULT_TIMEOUT_S,
    SHELL_DRAIN_GRACE_S,
    SHELL_KILL_GRACE_S,
    SHELL_MAX_TIMEOUT_S,
    SHELL_STREAM_MAX_BYTES,
)
from agent.tools.sandbox import (
    FIX,
    REACH_FIX,
    Launch,
    SandboxConfig,
    launch,
    processes_inside,
    sandbox_problem,
    workspace_problem,
)

PASSED_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "LOGNAME")
READ_CHUNK_BYTES = 65_536


class ShellParams(Params):
    command: str = Field(description="The bash command line to run, in the workspace directory.")
    timeout: int = Field(
        default=SHELL_DEFAULT_TIMEOUT_S,
        ge=1,
        le=SHELL_MAX_TIMEOUT_S,
        description="Seconds before the command and everything it started are killed.",
    )


def safe_environment(source: Mapping[str, str] = os.environ) -> dict[str, str]:
    environment = {name: source[name] for name in PASSED_ENVIRONMENT if name in source}
    environment.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    environment["TERM"] = "dumb"
    return environment


class BoundedStream:
    """Reads a pipe to its end, keeping the first bytes and counting all of them."""

    def __init__(self, limit: int = SHELL_STREAM_MAX_BYTES) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.total = 0

    async def drain(self, reader: asyncio.StreamReader) -> None:
        while chunk := await reader.read(READ_CHUNK_BYTES):
            self.total += len(chunk)
            room = self.limit - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]

    def render(self, label: str) -> str:
        text = self.kept.decode("utf-8", errors="replace").removesuffix("\n")
        if self.total > len(self.kept):
            text += f"\n[{label} cut: kept the first {len(self.kept)} of {self.total} bytes]"
        return text


def kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class _ExitAwareProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Notices the exit itself: `Process.wait()` also waits for the pipes, which background
    children can hold open for as long as they live."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


@dataclass
class Running:
    process: asyncio.subprocess.Process
    exited: asyncio.Event
    sandboxed: bool = False

    @property
    def pid(self) -> int:
        return self.process.pid

    async def wait_exit(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self.exited.wait(), timeout)
        except TimeoutError:
            return False
        return True


async def spawn(
    started: Launch, stdin: int = asyncio.subprocess.DEVNULL, limit: int = READ_CHUNK_BYTES
) -> Running:
    """`started`, in a process group of its own; `stdin` a pipe for a process spoken to (an MCP
    server), `limit` the longest line its stdout's reader reads."""
    loop = asyncio.get_running_loop()
    protocol = _ExitAwareProtocol(limit=limit, loop=loop)
    uid, gid = started.user if started.user is not None else (None, None)
    transport, _ = await loop.subprocess_exec(
        lambda: protocol,
        *started.argv,
        cwd=started.cwd,
        env=started.environment,
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group, so killpg reaches everything it starts
        user=uid,  # switched to (uid, gid, no groups) in the child, before exec
        group=gid,
        extra_groups=[] if started.user is not None else None,
    )
    process = asyncio.subprocess.Process(transport, protocol, loop)
    return Running(process, protocol.exited, started.sandboxed)


_stopping: set[asyncio.Task[None]] = set()  # stops outliving the call they were for


async def spawn_stoppable(
    started: Launch, stdin: int = asyncio.subprocess.DEVNULL, limit: int = READ_CHUNK_BYTES
) -> Running:
    """`spawn`, whose command is stopped even when the call is cancelled before it returns.

    The command runs from the moment it is spawned, while asyncio is still connecting its pipes;
    a cancel then would close the transport, which kills only the direct child and waits for
    the pipes, which a background child holds for as long as it lives."""
    spawning = asyncio.ensure_future(spawn(started, stdin, limit))
    try:
        return await asyncio.shield(spawning)
    except asyncio.CancelledError:
        spawning.add_done_callback(_stop_when_spawned)
        raise


def _stop_when_spawned(spawning: asyncio.Future[Running]) -> None:
    if spawning.cancelled() or spawning.exception() is not None:
        return
    stop = asyncio.ensure_future(stop_group(spawning.result()))
    _stopping.add(stop)
    stop.add_done_callback(_stopping.discard)


def terminate(running: Running) -> None:
    """SIGTERM what the command started: the group, or (sandboxed) every process in the sandbox."""
    if not running.sandboxed:
        kill_group(running.pid, signal.SIGTERM)
        return
    for pid in processes_inside(running.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)


async def stop_group(running: Running) -> None:
    """SIGTERM, SIGKILL after the grace; returns once the shell (or bwrap) has exited.

    SIGKILL goes to the group: bash and its group, or bwrap and its init, whose death kills
    every process left in the sandbox's PID namespace.
    """
    terminate(running)
    if not await running.wait_exit(SHELL_KILL_GRACE_S):
        kill_group(running.pid, signal.SIGKILL)
        await running.exited.wait()
    kill_group(running.pid, signal.SIGKILL)  # children that ignored SIGTERM


async def finish_reading(readers: asyncio.Future[Any]) -> None:
    """Wait briefly for the pipes to close; a process that left the group may hold them forever."""
    try:
        await asyncio.wait_for(asyncio.shield(readers), SHELL_DRAIN_GRACE_S)
    except TimeoutError:
        readers.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await readers


@dataclass
class Outcome:
    exit_code: int | None
    stdout: BoundedStream
    stderr: BoundedStream
    timed_out: bool = False


def render(outcome: Outcome, timeout: int, note: str | None = None) -> ToolResult:
    if outcome.timed_out:
        head = f"Command timed out after {timeout} seconds and was killed, with everything it started."
    else:
        head = f"exit_code: {outcome.exit_code}" + (f" ({note})" if note else "")
    sections = [head, "stdout:", outcome.stdout.render("stdout") or "(empty)"]
    sections += ["stderr:", outcome.stderr.render("stderr") or "(empty)"]
    return ToolResult("\n".join(sections), is_error=outcome.timed_out or outcome.exit_code != 0)


class Shell(Tool[ShellParams]):
    name = "shell"
    description = (
        "Run a bash command in the session workspace and return its exit code, stdout and stderr "
        "(each bounded). The command is killed, with every process it started, when it times out or "
        "the turn is cancelled; background processes do not outlive it. Not interactive: stdin is empty. "
        "It runs in a sandbox: the workspace is the only writable path and the system (/usr) the only "
        "other thing visible, HOME and /tmp are private and emptied after each command, the network is "
        "usually off, and CPU time, memory, process count and file size are limited."
    )
    parameters = ShellParams
    requires_approval = True

    def __init__(
        self, environment: Mapping[str, str] | None = None, sandbox: SandboxConfig | None = None
    ) -> None:
        self._environment = dict(environment) if environment is not None else safe_environment()
        self.sandbox = sandbox if sandbox is not None else SandboxConfig()

    def unavailable_reason(self) -> str | None:
        problem = sandbox_problem(self.sandbox)
        if problem is None:
            return None
        return f"shell is unavailable: its OS sandbox cannot run on this worker ({problem}). Fix: {FIX}."

    async def run(self, args: ShellParams, context: ToolContext) -> ToolResult:
        unreachable = workspace_problem(self.sandbox, context.workspace)
        if unreachable is not None:
            return error_result(f"shell is unavailable: {unreachable}. Fix: {REACH_FIX}.")
        started = launch(self.sandbox, args.command, context.workspace, self._environment)
        running = await spawn_stoppable(started)
        try:
            outcome = await self._supervise(running, args.timeout)
        except BaseException:  # cancelled (or failed): nothing it started may survive
            await asyncio.shield(stop_group(running))
            raise
        return render(outcome, args.timeout, limit_note(self.sandbox, outcome.exit_code))

    async def _supervise(self, running: Running, timeout: int) -> Outcome:
        process = running.process
        assert process.stdout is not None and process.stderr is not None
        stdout, stderr = BoundedStream(), BoundedStream()
        readers = asyncio.gather(stdout.drain(process.stdout), stderr.drain(process.stderr))
        try:
            if not await running.wait_exit(timeout):
                await stop_group(running)
                await finish_reading(readers)
                return Outcome(None, stdout, stderr, timed_out=True)
            if not await _closed_within(readers, SHELL_DRAIN_GRACE_S):
                kill_group(running.pid, signal.SIGKILL)  # background children hold the pipes
            await finish_reading(readers)
            kill_group(running.pid, signal.SIGKILL)  # and those that did not
            return Outcome(process.returncode, stdout, stderr)
        finally:
            if not readers.done():
                readers.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await readers


def limit_note(sandbox: SandboxConfig, exit_code: int | None) -> str | None:
    """Name the sandbox limit behind an exit by SIGXCPU or SIGXFSZ, so the model knows why."""
    if not sandbox.enabled or exit_code is None:
        return None
    if exit_code == 128 + signal.SIGXCPU:
        return f"killed by SIGXCPU: the sandbox's CPU time limit, {sandbox.limits.cpu_seconds} s per process"
    if exit_code == 128 + signal.SIGXFSZ:
        return f"killed by SIGXFSZ: the sandbox's file size limit, {sandbox.limits.file_size_mb} MiB"
    return None


async def _closed_within(readers: asyncio.Future[Any], seconds: float) -> bool:
    try:
        await asyncio.wait_for(asyncio.shield(readers), seconds)
    except TimeoutError:
        return False
    return True
