"""Which MCP tools a channel's turns get: the entry's channels, its allow-list and its approvals,
listed from a real server written with the SDK."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

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
