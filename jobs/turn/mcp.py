"""The MCP servers of one worker process (MCP_SERVERS): a connection each, their tools listed once.

A remote server (a `url`) gets one connection per worker process, shared by its turns. A stdio
server (a `command`) runs inside the shell sandbox of a session, with that session's workspace, so
it is started per turn, on the turn's first call of one of its tools, and stopped when the turn
ends: one process per worker would share one sandbox between threads. Its tool list is still
fetched once per process, from a run in an empty scratch directory with no network.

Connections live on the turns' event loop (jobs.turn.host) and are opened on first use, so a
server that is down when the worker starts stops nothing: its tools are absent from the turns that
start while it is down, it is tried again after RETRY_DOWN_S, and a model that calls one of its
tools anyway reads that the server is not answering, and the thread is told once. A server's tool
list is fetched once per process and again when the server says it changed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agent.redaction import redact_text
from agent.tools.builtin.http_policy import HttpGetPolicy
from agent.tools.mcp.connection import McpConnection
from agent.tools.mcp.servers import McpServer
from agent.tools.mcp.stdio import stdio_opener
from agent.tools.mcp.tool import SEPARATOR, McpTool, any_schema, failure_text, mcp_tools
from agent.tools.mcp.transports import http_opener
from agent.tools.registry import ToolRegistry
from agent.tools.sandbox import sandbox_user
from jobs.keys import mcp_down_notice_key
from jobs.session.notices import InfoNotice
from jobs.session.store import SessionStore
from jobs.settings import Settings
from jobs.turn.host import host
from jobs.turn.publisher import Publisher
from jobs.turn.sandbox import shell_sandbox
from jobs.turn.workspace import hand_over

log = logging.getLogger(__name__)

RETRY_DOWN_S = 30.0
LIST_WAIT_S = 20.0  # how long a turn's start waits for the servers to list their tools
DOWN_NOTICE_TTL_S = 24 * 3600  # a thread is told again the next day, if the server is still down


def resolved_headers(entry: McpServer, environ: Mapping[str, str]) -> dict[str, str]:
    """The entry's headers with each `$NAME` value read from the environment."""
    return {
        name: environ[value[1:]] if value.startswith("$") else value for name, value in entry.headers.items()
    }


@dataclass
class McpServerState:
    name: str
    entry: McpServer
    connection: McpConnection
    registry: ToolRegistry | None = None  # None: not listed yet, or down
    down_since: float | None = None
    error: str = ""
    listing: asyncio.Task[None] | None = None  # the one listing of it under way
    scratch: Scratch | None = None  # a stdio server's: where it runs to be listed


@dataclass
class McpCatalog:
    servers: dict[str, McpServerState] = field(default_factory=dict)
    vision: bool = False
    retry_down_s: float = RETRY_DOWN_S

    @classmethod
    def of(cls, settings: Settings) -> McpCatalog:
        policy = HttpGetPolicy.from_allowlist(settings.HTTP_GET_ALLOW_HOSTS)
        servers = {}
        for name, entry in settings.MCP_SERVERS.items():
            if entry.url is not None:
                opener = http_opener(entry, resolved_headers(entry, os.environ), policy)
                scratch = None
            else:
                scratch = Scratch.of(settings, name)
                opener = stdio_opener(name, entry, shell_sandbox(settings), scratch.path)
            servers[name] = McpServerState(name, entry, McpConnection(name, opener), scratch=scratch)
        return cls(servers, settings.LLM_VISION)

    async def refresh(self) -> None:
        """List the tools of every server not tried yet or whose tools changed, which a turn's start
        waits for; a server that was down is tried again in the background, for later turns, so a
        server that hangs holds up no turn after the first."""
        waited = []
        for server in self.servers.values():
            if self._due(server):
                listing = self._listing(server)
                if server.down_since is None:
                    waited.append(listing)
        await asyncio.gather(*waited)

    def _listing(self, server: McpServerState) -> asyncio.Task[None]:
        if server.listing is None or server.listing.done():
            server.listing = asyncio.ensure_future(self._list(server))
        return server.listing

    def tools_for(self, channel: str | None, turn: TurnServers) -> ToolRegistry:
        """The listed tools of the servers that serve `channel`; a stdio server's bound to `turn`'s
        own run of it."""
        registry = ToolRegistry()
        for server in self.servers.values():
            if server.registry is None or not server.entry.serves(channel):
                continue
            listed = server.registry
            if server.entry.command is not None:
                listed = listed.rebound(
                    [tool.bound_to(turn.connection(server.name)) for tool in _mcp(listed)]
                )
            registry.include(listed)
        return registry

    async def close(self) -> None:
        await asyncio.gather(*(server.connection.close() for server in self.servers.values()))

    def down(self, tool_name: str, channel: str | None) -> McpServerState | None:
        """The server a missing tool's name points at, when it serves the channel but is down."""
        server = self.servers.get(tool_name.partition(SEPARATOR)[0]) if SEPARATOR in tool_name else None
        if server is None or not server.entry.serves(channel) or server.registry is not None:
            return None
        return server

    def _due(self, server: McpServerState) -> bool:
        if server.registry is None:
            return server.down_since is None or time.monotonic() - server.down_since >= self.retry_down_s
        return server.connection.tools_changed

    async def _list(self, server: McpServerState) -> None:
        if server.scratch is not None:
            server.scratch.make()
        try:
            listed = await server.connection.list_tools()
        except Exception as error:  # down, refused, or not an MCP server: its tools are absent
            server.registry, server.down_since = None, time.monotonic()
            server.error = redact_text(failure_text(error))
            log.warning("MCP server %s is not answering: %s", server.name, server.error)
            return
        finally:
            if server.scratch is not None:  # listed from its scratch run: turns start their own
                await server.connection.close()
                server.scratch.remove()
        registry = ToolRegistry()
        for tool in mcp_tools(server.name, server.entry, listed, server.connection, vision=self.vision):
            try:
                registry.register(tool, any_schema(tool.schema))
            except Exception as error:  # a schema that does not compile: that tool is left out
                log.warning("MCP server %s: tool %s left out: %s", server.name, tool.remote_name, error)
        server.registry, server.down_since, server.error = registry, None, ""
        log.info("MCP server %s lists %d tool(s)", server.name, len(registry))


def _mcp(registry: ToolRegistry) -> list[McpTool]:
    return [tool for tool in registry if isinstance(tool, McpTool)]


class TurnServers:
    """The stdio servers of one turn: each started on its first call, all stopped at the end."""

    def __init__(self, settings: Settings, channel: str | None, workspace: Path) -> None:
        self._settings, self._channel, self._workspace = settings, channel, workspace
        self._connections: dict[str, McpConnection] = {}

    def connection(self, name: str) -> McpConnection:
        if name not in self._connections:
            entry = self._settings.MCP_SERVERS[name]
            sandbox = shell_sandbox(self._settings, self._channel)
            self._connections[name] = McpConnection(name, stdio_opener(name, entry, sandbox, self._workspace))
        return self._connections[name]

    async def close(self, catalog: McpCatalog) -> None:
        """Stop the turn's servers; one that said its tools changed is listed again."""
        for name, connection in self._connections.items():
            if connection.tools_changed:
                catalog.servers[name].connection.tools_changed = True
        await asyncio.gather(*(connection.close() for connection in self._connections.values()))


@dataclass(frozen=True)
class Scratch:
    """The empty directory a stdio server is listed in: made for each listing, owned as a session's
    workspace is, and removed after it."""

    path: Path
    owner: tuple[int, int] | None

    @classmethod
    def of(cls, settings: Settings, server: str) -> Scratch:
        path = (settings.AGENT_WORKDIR / ".threadline-mcp" / f"{os.getpid()}-{server}").resolve()
        return cls(path, sandbox_user(shell_sandbox(settings)))

    def make(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        if self.owner is not None:
            hand_over(self.path, self.owner)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


_catalogs: dict[str, McpCatalog] = {}


def process_catalog(settings: Settings) -> McpCatalog:
    """This process's catalog for these settings (made once: its connections are kept)."""
    key = json.dumps(
        [
            {n: e.model_dump() for n, e in settings.MCP_SERVERS.items()},
            settings.HTTP_GET_ALLOW_HOSTS,
            settings.LLM_VISION,
        ]
    )
    if key not in _catalogs:
        _catalogs[key] = McpCatalog.of(settings)
    return _catalogs[key]


def listed_catalog(settings: Settings) -> McpCatalog:
    """This process's catalog, its servers listed on the turns' loop (from a lane thread)."""
    catalog = process_catalog(settings)
    if catalog.servers:
        listing = asyncio.run_coroutine_threadsafe(catalog.refresh(), host().loop)
        try:
            listing.result(LIST_WAIT_S)
        except concurrent.futures.TimeoutError:
            log.warning(
                "MCP servers still listing their tools after %g s: this turn goes without", LIST_WAIT_S
            )
    return catalog


def down_text(catalog: McpCatalog, store: SessionStore, publisher: Publisher, tool_name: str) -> str | None:
    """For a call of a tool whose server is down: the model's text, and the thread told once."""
    server = catalog.down(tool_name, store.key.channel)
    if server is None:
        return None
    publisher.later(lambda: _tell_thread_once(store, server.name))
    return (
        f'The MCP server "{server.name}" is not answering, so its tools ({tool_name} among them) are '
        "unavailable for now. Go on without them, or tell the user."
    )


def _tell_thread_once(store: SessionStore, server: str) -> None:
    if store.redis.set(mcp_down_notice_key(store.key, server), "1", nx=True, ex=DOWN_NOTICE_TTL_S):
        text = f"The MCP server *{server}* is not answering: its tools are unavailable."
        store.post_notice(InfoNotice(text=text))
