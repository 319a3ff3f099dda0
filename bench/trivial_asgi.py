"""A trivial ASGI app: reads the request's body and answers `200 ok`.

bench.gateway's self-check serves it with uvicorn in a process of its own and aims the load
generator at it, so a slow figure later is the server's, not the generator's.

    python -m uvicorn bench.trivial_asgi:app --lifespan off
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

HEADERS = [(b"content-type", b"text/plain"), (b"content-length", b"2")]


async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    message = await receive()
    while message.get("more_body"):
        message = await receive()
    if message["type"] == "http.disconnect":
        return
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": b"ok"})
