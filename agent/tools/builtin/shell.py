"""shell: run a command in the session workspace, in its own process group.

The command runs under `bash -c` in a new session (its own process group), so a timeout or
a cancel can kill everything it started: SIGTERM to the group, then SIGKILL after a short
grace. Background children that outlive the command are killed too when it exits, so they
cannot hold the output pipes open. The environment is reduced to a few harmless variables:
the worker's secrets (Slack and model tokens) must not reach model-written commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from agent.tools.base import Tool, ToolContext, ToolResult
from agent.tools.builtin.common import Params
from agent.tools.defaults import (
    SHELL_DEFAULT_TIMEOUT_S,
    SHELL_DRAIN_GRACE_S,
    SHELL_KILL_GRACE_S,
    SHELL_MAX_TIMEOUT_S,
    SHELL_STREAM_MAX_BYTES,
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

    @property
    def pid(self) -> int:
        return self.process.pid

    async def wait_exit(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self.exited.wait(), timeout)
        except TimeoutError:
            return False
        return True


async def spawn(command: str, cwd: Path, environment: Mapping[str, str]) -> Running:
    loop = asyncio.get_running_loop()
    protocol = _ExitAwareProtocol(limit=READ_CHUNK_BYTES, loop=loop)
    transport, _ = await loop.subprocess_exec(
        lambda: protocol,
        "bash",
        "-c",
        command,
        cwd=cwd,
        env=dict(environment),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group, so killpg reaches everything it starts
    )
    return Running(asyncio.subprocess.Process(transport, protocol, loop), protocol.exited)


async def stop_group(running: Running) -> None:
    """SIGTERM the whole group, SIGKILL it after the grace; returns once the shell has exited."""
    kill_group(running.pid, signal.SIGTERM)
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


def render(outcome: Outcome, timeout: int) -> ToolResult:
    if outcome.timed_out:
        head = f"Command timed out after {timeout} seconds and was killed, with everything it started."
    else:
        head = f"exit_code: {outcome.exit_code}"
    sections = [head, "stdout:", outcome.stdout.render("stdout") or "(empty)"]
    sections += ["stderr:", outcome.stderr.render("stderr") or "(empty)"]
    return ToolResult("\n".join(sections), is_error=outcome.timed_out or outcome.exit_code != 0)


class Shell(Tool[ShellParams]):
    name = "shell"
    description = (
        "Run a bash command in the session workspace and return its exit code, stdout and stderr "
        "(each bounded). The command is killed, with every process it started, when it times out or "
        "the turn is cancelled; background processes do not outlive it. Not interactive: stdin is empty."
    )
    parameters = ShellParams
    requires_approval = True

    def __init__(self, environment: Mapping[str, str] | None = None) -> None:
        self._environment = dict(environment) if environment is not None else safe_environment()

    async def run(self, args: ShellParams, context: ToolContext) -> ToolResult:
        running = await spawn(args.command, context.workspace, self._environment)
        try:
            outcome = await self._supervise(running, args.timeout)
        except BaseException:  # cancelled (or failed): nothing it started may survive
            await asyncio.shield(stop_group(running))
            raise
        return render(outcome, args.timeout)

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


async def _closed_within(readers: asyncio.Future[Any], seconds: float) -> bool:
    try:
        await asyncio.wait_for(asyncio.shield(readers), seconds)
    except TimeoutError:
        return False
    return True
