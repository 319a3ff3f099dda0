"""Which MCP tools a channel's turns get: the entry's channels, its allow-list and its approvals,
listed from a real server written with the SDK."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.sandbox.ports import free_port
from jobs.settings import Settings
from jobs.turn.mcp import McpCatalog, TurnServers
from tests.mcp_fixture import McpFixture


@pytest.fixture
def server(tmp_path: Path) -> Iterator[McpFixture]:
    running = McpFixture(tmp_path).start()
    yield running
    running.stop()


def listed(settings: Settings) -> McpCatalog:
    catalog = McpCatalog.of(settings)

    async def refresh() -> None:
        await catalog.refresh()
        await catalog.close()

    asyncio.run(refresh())
    return catalog


def test_a_channel_gets_the_allowed_tools_of_the_servers_that_serve_it(server: McpFixture, tmp_path: Path):
    entry = {
        "url": server.url,
        "internal": True,
        "channels": ["C1"],
        "tools": ["echo", "hang"],
        "approval": ["hang"],
    }
    settings = Settings.load(AGENT_WORKDIR=tmp_path, MCP_SERVERS={"fixture": entry})
    catalog = listed(settings)

    tools = catalog.tools_for("C1", TurnServers(settings, "C1", tmp_path))
    assert tools.names == ["fixture__echo", "fixture__hang"]
    assert [tools.get(name).requires_approval for name in tools.names] == [False, True]  # type: ignore[union-attr]
    assert tools.schema("fixture__echo")["required"] == ["text"]
    assert tools.validator("fixture__echo").describe({"text": 3}) is not None
    assert catalog.tools_for("C2", TurnServers(settings, "C2", tmp_path)).names == []


def test_a_server_down_at_start_is_tried_again_after_its_wait_and_its_tools_then_come(tmp_path: Path):
    port = free_port()
    entry = {"url": f"http://127.0.0.1:{port}/mcp", "internal": True, "approval": "never"}
    settings = Settings.load(AGENT_WORKDIR=tmp_path, MCP_SERVERS={"fixture": entry})
    catalog = McpCatalog.of(settings)
    catalog.retry_down_s = 3600
    loop = asyncio.new_event_loop()

    def names() -> list[str]:
        return catalog.tools_for("C1", TurnServers(settings, "C1", tmp_path)).names

    async def until_listed(deadline_s: float) -> None:
        deadline = time.monotonic() + deadline_s
        while not names() and time.monotonic() < deadline:
            await catalog.refresh()  # a retry is not waited for: later refreshes see its tools
            await asyncio.sleep(0.05)

    server = None
    try:
        loop.run_until_complete(catalog.refresh())
        assert names() == [] and catalog.servers["fixture"].error
        server = McpFixture(tmp_path, port=port).start()
        loop.run_until_complete(catalog.refresh())
        assert names() == []  # down a moment ago: not tried again before its wait is over
        catalog.retry_down_s = 0
        loop.run_until_complete(until_listed(30))
        assert "fixture__echo" in names() and catalog.servers["fixture"].error == ""
    finally:
        loop.run_until_complete(catalog.close())
        loop.close()
        if server is not None:
            server.stop()
