"""One MCP server as a worker holds it: a client session opened once, its tools, and calls to them.

The SDK's session lives in a task of its own (its transports are anyio task groups, entered and
left by one task); calls come from the turns' tasks on the same loop. What the SDK leaves to us:

- Cancel. A call whose task is cancelled (the user's stop, a deploy's drain) tells the server
  with `notifications/cancelled` for that request's id, which the session's write stream notes
  as the calling task sends it.
- A server that goes away mid-call. Over HTTP, the call would wait for an answer that cannot
  come; so while a call runs the connection pings the server, and a ping that goes unanswered
  ends the call with an unknown outcome (the call may or may not have taken effect) and closes
  the connection, which the next use opens again.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, cast

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import ClientSession, types
from mcp.shared.exceptions import McpError
from mcp.shared.message import SessionMessage
from mcp.types import CONNECTION_CLOSED

log = logging.getLogger(__name__)

OPEN_TIMEOUT_S = 15.0
PING_EVERY_S = 2.0
PING_TIMEOUT_S = 3.0
CANCEL_SEND_TIMEOUT_S = 1.0

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
Opener = Callable[[], AbstractAsyncContextManager[Streams]]

_sent_requests: contextvars.ContextVar[list[types.RequestId] | None] = contextvars.ContextVar(
    "mcp_sent_requests", default=None
)


class ServerGone(Exception):
    """The server stopped answering while a call ran: the call's outcome is unknown."""


class CallTimedOut(Exception):
    """The server did not answer the call in time (it was told to stop)."""


@dataclass(frozen=True)
class ListedTool:
    name: str
    description: str
    schema: dict[str, Any]


class _NotingWriter:
    """The session's write stream: passes every message on, and notes the id of each request in
    the sending task's list, so a cancelled call knows which request to cancel."""

    def __init__(self, inner: MemoryObjectSendStream[SessionMessage]) -> None:
        self._inner = inner

    async def send(self, message: SessionMessage) -> None:
        noted = _sent_requests.get()
        root = message.message.root
        if noted is not None and isinstance(root, types.JSONRPCRequest):
            noted.append(root.id)
        await self._inner.send(message)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _NotingWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class McpConnection:
    def __init__(self, name: str, opener: Opener) -> None:
        self.name = name
        self._opener = opener
        self._session: ClientSession | None = None
        self._holder: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._gone = asyncio.Event()
        self._opening: asyncio.Future[ClientSession] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop that holds the session
        self.tools_changed = False  # the server said its tool list changed since it was listed

    async def session(self) -> ClientSession:
        """The open session, opening it first if needed (raises when the server cannot be reached)."""
        self._loop = asyncio.get_running_loop()
        if self._session is not None and not self._closing.is_set():
            return self._session
        if self._opening is None or self._opening.done():
            await self._closed()
        if self._opening is None or self._opening.done():
            self._opening = self._loop.create_future()
            self._closing, self._gone = asyncio.Event(), asyncio.Event()
            self._holder = asyncio.ensure_future(self._hold(self._opening))
        return await asyncio.wait_for(asyncio.shield(self._opening), OPEN_TIMEOUT_S)

    async def _closed(self) -> None:
        """The previous session's task has ended (asked to, when it is still open)."""
        if self._holder is not None and not self._holder.done():
            self._closing.set()
            await asyncio.wait({self._holder}, timeout=OPEN_TIMEOUT_S)

    async def list_tools(self) -> list[ListedTool]:
        session = await self.session()
        listed: list[ListedTool] = []
        cursor: str | None = None
        while True:
            page = await asyncio.wait_for(session.list_tools(cursor=cursor), OPEN_TIMEOUT_S)
            listed += [ListedTool(t.name, t.description or "", dict(t.inputSchema)) for t in page.tools]
            cursor = page.nextCursor
            if not cursor:
                self.tools_changed = False
                return listed

    async def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> types.CallToolResult:
        """The server's answer; raises ServerGone or CallTimedOut, and passes a cancel on to it.
        Runs on the loop that holds the connection, whichever loop calls it."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        if self._loop is not asyncio.get_running_loop():
            hop = asyncio.run_coroutine_threadsafe(self._call(tool, arguments, timeout_s), self._loop)
            return await asyncio.wrap_future(hop)
        return await self._call(tool, arguments, timeout_s)

    async def _call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> types.CallToolResult:
        session = await self.session()
        sent: list[types.RequestId] = []
        token = _sent_requests.set(sent)
        try:
            calling = asyncio.ensure_future(session.call_tool(tool, arguments))
        finally:
            _sent_requests.reset(token)
        watching = asyncio.ensure_future(self._watch(session))
        try:
            done, _ = await asyncio.wait(
                {calling, watching}, timeout=timeout_s, return_when="FIRST_COMPLETED"
            )
            if calling in done:
                return self._answer(calling)
            if watching in done:
                raise ServerGone(self.name)
            await self._cancel(session, sent, "timed out")
            raise CallTimedOut(self.name)
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel(session, sent, "cancelled by the user"))
            raise
        finally:
            for task in (calling, watching):
                task.cancel()

    def _answer(self, calling: asyncio.Future[types.CallToolResult]) -> types.CallToolResult:
        try:
            return calling.result()
        except McpError as error:
            if error.error.code != CONNECTION_CLOSED:
                raise
        self._closing.set()  # the process exited, or the stream broke: the next use opens it again
        raise ServerGone(self.name)

    async def close(self) -> None:
        self._closing.set()
        if self._holder is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._holder, OPEN_TIMEOUT_S)

    async def _watch(self, session: ClientSession) -> None:
        """Returns when the server stops answering pings (the connection is then closed)."""
        while not self._gone.is_set():
            await asyncio.sleep(PING_EVERY_S)
            try:
                await asyncio.wait_for(session.send_ping(), PING_TIMEOUT_S)
            except McpError as error:  # an answer, even an error, is a server that is there
                if error.error.code == CONNECTION_CLOSED:
                    break
            except Exception:
                break
        log.warning("MCP server %s stopped answering", self.name)
        self._closing.set()

    async def _cancel(self, session: ClientSession, sent: list[types.RequestId], reason: str) -> None:
        if not sent or self._gone.is_set():
            return
        notice = types.CancelledNotification(
            params=types.CancelledNotificationParams(requestId=sent[0], reason=reason)
        )
        with contextlib.suppress(Exception):
            await asyncio.wait_for(
                session.send_notification(types.ClientNotification(notice)), CANCEL_SEND_TIMEOUT_S
            )

    async def _hold(self, opened: asyncio.Future[ClientSession]) -> None:
        try:
            async with self._opener() as (read, write):
                writer = cast(MemoryObjectSendStream[SessionMessage], _NotingWriter(write))
                async with ClientSession(read, writer, message_handler=self._on_message) as session:
                    await session.initialize()
                    self._session = session
                    opened.set_result(session)
                    await self._closing.wait()
        except BaseException as error:
            if not opened.done():
                opened.set_exception(error if isinstance(error, Exception) else ConnectionError(str(error)))
        finally:
            self._session = None
            self._gone.set()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            self.tools_changed = True
        await anyio.lowlevel.checkpoint()
