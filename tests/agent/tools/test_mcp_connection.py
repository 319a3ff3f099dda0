"""How a connection tells a slow server from a gone one: a server whose every answer is written
here by hand, over the SDK's in-memory streams, so it can answer a ping with an error or not at all."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import anyio
import pytest
from mcp import types
from mcp.shared.message import SessionMessage

from agent.tools.mcp import connection as mcp_connection
from agent.tools.mcp.connection import McpConnection, ServerGone

INITIALIZED = {
    "protocolVersion": types.LATEST_PROTOCOL_VERSION,
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "by-hand", "version": "1"},
}


class ByHand:
    """Answers initialize at once, a tool call after `call_s`, and a ping as `ping` says:
    "answer", "error" (a JSON-RPC error) or "silence"."""

    def __init__(self, ping: str, call_s: float) -> None:
        self.ping, self.call_s = ping, call_s
        self.pings = 0
        self._answering: set[asyncio.Task[None]] = set()

    @contextlib.asynccontextmanager
    async def opener(self) -> AsyncIterator[tuple]:
        to_client, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        client_writes, from_client = anyio.create_memory_object_stream[SessionMessage](16)
        serving = asyncio.ensure_future(self._serve(from_client, to_client))
        try:
            yield client_reads, client_writes
        finally:
            serving.cancel()

    async def _serve(self, incoming, outgoing) -> None:
        async for message in incoming:
            root = message.message.root
            if isinstance(root, types.JSONRPCRequest):
                answering = asyncio.ensure_future(self._answer(root, outgoing))
                self._answering.add(answering)
                answering.add_done_callback(self._answering.discard)

    async def _answer(self, request: types.JSONRPCRequest, outgoing) -> None:
        if request.method == "ping":
            self.pings += 1
            if self.ping == "silence":
                return
            if self.ping == "error":
                error = types.ErrorData(code=types.METHOD_NOT_FOUND, message="no ping here")
                await outgoing.send(SessionMessage(types.JSONRPCMessage(
                    types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error))))  # fmt: skip
                return
            result: dict = {}
        elif request.method == "initialize":
            result = INITIALIZED
        elif request.method == "tools/list":  # the SDK lists the tools to check a call's result
            result = {"tools": [{"name": "slow", "inputSchema": {"type": "object"}}]}
        else:
            await asyncio.sleep(self.call_s)
            result = {"content": [{"type": "text", "text": "slow but here"}], "isError": False}
        await outgoing.send(SessionMessage(types.JSONRPCMessage(
            types.JSONRPCResponse(jsonrpc="2.0", id=request.id, result=result))))  # fmt: skip


@pytest.fixture(autouse=True)
def quick_pings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_connection, "PING_EVERY_S", 0.05)
    monkeypatch.setattr(mcp_connection, "PING_TIMEOUT_S", 0.2)


def call(server: ByHand) -> types.CallToolResult:
    async def run() -> types.CallToolResult:
        connection = McpConnection("by-hand", server.opener)
        try:
            return await connection.call("slow", {}, timeout_s=30)
        finally:
            await connection.close()

    return asyncio.run(run())


@pytest.mark.parametrize("ping", ["answer", "error"])
def test_a_server_that_answers_pings_even_with_an_error_is_waited_for(ping: str) -> None:
    server = ByHand(ping, call_s=1.0)
    answer = call(server)
    assert answer.content[0].text == "slow but here"  # type: ignore[union-attr]
    assert server.pings >= 3


def test_a_server_that_stops_answering_pings_ends_the_call_as_gone() -> None:
    with pytest.raises(ServerGone):
        call(ByHand("silence", call_s=30))
