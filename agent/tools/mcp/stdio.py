"""A stdio MCP server, run inside the shell sandbox of the session it serves.

The server is a program the deployment chose, but what it does with the model's arguments is not
ours to trust: it gets what a `shell` command gets (bubblewrap, the session's workspace as the only
writable place, the channel's network or none, the limits) plus the host paths its entry lists as
read-only (where it is installed). The SDK's own stdio client cannot start a process as another
user; so the process is started here, as `shell` starts its commands, and its stdin and stdout
become the streams an SDK session speaks over, one JSON-RPC message per line.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import shlex
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from mcp import types
from mcp.shared.message import SessionMessage

from agent.tools.builtin.shell import Running, spawn_stoppable, stop_group
from agent.tools.mcp.connection import Opener, Streams
from agent.tools.mcp.servers import McpServer
from agent.tools.sandbox import SandboxConfig, launch

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 16 * 1024 * 1024  # one message; a longer line ends the connection


def stdio_opener(name: str, entry: McpServer, sandbox: SandboxConfig, workspace: Path) -> Opener:
    """Opens `entry` (a server with a command) in `sandbox`, with `workspace` as its directory."""
    assert entry.command is not None
    contained = dataclasses.replace(sandbox, read_only=(*sandbox.read_only, *entry.read_only))
    command = shlex.join(entry.command)

    @contextlib.asynccontextmanager
    async def opened() -> AsyncIterator[Streams]:
        started = launch(contained, command, workspace, {})
        running = await spawn_stoppable(started, stdin=asyncio.subprocess.PIPE, limit=MAX_LINE_BYTES)
        to_session, read = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        write, from_session = anyio.create_memory_object_stream[SessionMessage](16)
        pumps = [
            asyncio.ensure_future(_read(name, running, to_session)),
            asyncio.ensure_future(_write(running, from_session)),
            asyncio.ensure_future(_drain(running)),
        ]
        try:
            yield read, write
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.shield(stop_group(running))

    return opened


async def _read(
    name: str, running: Running, sink: anyio.abc.ObjectSendStream[SessionMessage | Exception]
) -> None:
    stdout = running.process.stdout
    assert stdout is not None
    async with sink:
        while line := await stdout.readline():
            try:
                message = types.JSONRPCMessage.model_validate_json(line)
            except ValueError:
                log.warning("MCP server %s wrote a line that is not JSON-RPC", name)
                continue
            await sink.send(SessionMessage(message))


async def _write(running: Running, source: anyio.abc.ObjectReceiveStream[SessionMessage]) -> None:
    stdin = running.process.stdin
    assert stdin is not None
    async with source:
        async for message in source:
            stdin.write(message.message.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n")
            await stdin.drain()


async def _drain(running: Running) -> None:
    """Its stderr is read and dropped, so a chatty server never blocks on a full pipe."""
    stderr = running.process.stderr
    assert stderr is not None
    while await stderr.read(65536):
        pass
