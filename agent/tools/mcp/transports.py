"""How a connection reaches its server: streamable HTTP or SSE through the guarded transport."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping

import httpx
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from agent.tools.builtin.http_policy import HttpGetPolicy, Opening, normal_host
from agent.tools.mcp.connection import Opener, Streams
from agent.tools.mcp.guarded_http import GuardedTransport
from agent.tools.mcp.servers import McpServer

CONNECT_TIMEOUT_S = 15.0
STREAM_READ_TIMEOUT_S = 300.0  # a server may hold its event stream open this long between events


def server_policy(server: McpServer, policy: HttpGetPolicy) -> HttpGetPolicy:
    """The deployment's http_get policy, plus the entry's own host when it says it is internal."""
    if not server.internal or server.url is None:
        return policy
    url = httpx.URL(server.url)
    opening = Opening(host=normal_host(url.host), port=url.port or (443 if url.scheme == "https" else 80))
    return HttpGetPolicy((*policy.openings, opening))


def http_opener(server: McpServer, headers: Mapping[str, str], policy: HttpGetPolicy) -> Opener:
    """Opens `server` (an entry with a url) with `headers` (its `$NAME` values already resolved)."""
    assert server.url is not None
    url, guarded = server.url, server_policy(server, policy)

    def client(
        headers: dict[str, str] | None = None,
        timeout: httpx.Timeout | None = None,
        auth: httpx.Auth | None = None,
    ) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=GuardedTransport(guarded),
            headers=headers,
            timeout=timeout or httpx.Timeout(CONNECT_TIMEOUT_S, read=STREAM_READ_TIMEOUT_S),
            auth=auth,
        )

    @contextlib.asynccontextmanager
    async def streamable() -> AsyncIterator[Streams]:
        async with (
            client(dict(headers)) as http,
            streamable_http_client(url, http_client=http) as (read, write, _),
        ):
            yield read, write

    @contextlib.asynccontextmanager
    async def sse() -> AsyncIterator[Streams]:
        async with sse_client(url, headers=dict(headers), httpx_client_factory=client) as (read, write):
            yield read, write

    return sse if server.transport == "sse" else streamable
