"""A local MCP server written with the official SDK, for the tests: `python -m tests.mcp_server`.

    python -m tests.mcp_server --http PORT [--sse] --journal FILE [--require-header NAME=VALUE]
    python -m tests.mcp_server --stdio --journal FILE
    /usr/bin/python3 tests/mcp_server.py --site VENV_SITE_PACKAGES --stdio --journal FILE   (sandboxed)

Its tools: `echo`, `add` (a strict schema), `hang` (waits until the call is cancelled), `die`
(the server process exits mid-call), `huge` (a result of 300,000 characters), `picture` (an
image and a resource link), `read` (a file), `reach` (a local port) and `grow` (adds a tool and
says the list changed). Every call, every
cancellation it hears and every request's headers go to the journal, a line of JSON each, so a
test reads what the server saw.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

if "--site" in sys.argv:  # the system's python in a sandbox: the SDK from the project's virtualenv
    sys.path.insert(0, sys.argv[sys.argv.index("--site") + 1])

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ImageContent, ResourceLink, TextContent
from pydantic import Field

# The smallest valid PNG: one transparent pixel.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def build(journal: Path, required: tuple[str, str] | None) -> FastMCP:
    server = FastMCP("fixture", log_level="WARNING")

    def note(**entry: Any) -> None:
        with journal.open("a") as out:
            out.write(json.dumps({**entry, "at": time.time()}) + "\n")

    def check(ctx: Context) -> None:
        request = ctx.request_context.request
        headers = dict(request.headers) if request is not None else {}
        note(event="headers", headers=headers)
        if required is not None and headers.get(required[0].lower()) != required[1]:
            raise ValueError("missing the required header")

    @server.tool(description="Says the text back.")
    async def echo(text: str, ctx: Context) -> str:
        check(ctx)
        note(event="call", tool="echo", text=text)
        return f"echo: {text}"

    @server.tool(description="Adds two integers.")
    async def add(a: int, b: int) -> str:
        note(event="call", tool="add", a=a, b=b)
        return str(a + b)

    # The server's own check (pydantic's) is linear; a client matching it by backtracking is not.
    @server.tool(description="Finds a code made of a and aa.")
    async def find(code: Annotated[str, Field(pattern="^(a|aa)+$")]) -> str:
        note(event="call", tool="find", code=code)
        return f"found {code}"

    @server.tool(description="Waits until the call is cancelled.")
    async def hang() -> str:
        note(event="call", tool="hang")
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            note(event="cancelled", tool="hang")
            raise
        return "woke"

    @server.tool(description="The server exits in the middle of the call.")
    async def die() -> str:
        note(event="call", tool="die")
        os._exit(3)

    @server.tool(description="A very long result.")
    async def huge() -> str:
        note(event="call", tool="huge")
        return "".join(f"line {n:06d} of the huge result\n" for n in range(10_000))

    @server.tool(description="An image and a link to a resource.")
    async def picture() -> list[Any]:
        note(event="call", tool="picture")
        return [
            TextContent(type="text", text="a pixel"),
            ImageContent(type="image", data=base64.b64encode(PIXEL).decode(), mimeType="image/png"),
            ResourceLink(type="resource_link", uri="file:///docs/pixel.md", name="pixel.md"),
        ]

    @server.tool(description="Reads a file.")
    async def read(path: str) -> str:
        note(event="call", tool="read", path=path)
        try:
            return Path(path).read_text()
        except OSError as error:
            return f"cannot read: {error.strerror}"

    @server.tool(description="Opens a TCP connection to 127.0.0.1:port.")
    async def reach(port: int) -> str:
        note(event="call", tool="reach", port=port)
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
        except (OSError, TimeoutError) as error:
            return f"cannot connect: {error}"
        writer.close()
        return "connected"

    @server.tool(description="Adds the tool `grown` and tells the client the tool list changed.")
    async def grow(ctx: Context) -> str:
        note(event="call", tool="grow")

        @server.tool(name="grown", description="Exists after grow.")
        async def grown() -> str:
            return "grown"

        await ctx.session.send_tool_list_changed()
        return "grew"

    return server


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--http", type=int, help="serve streamable HTTP on 127.0.0.1:PORT at /mcp")
    parser.add_argument(
        "--sse", action="store_true", help="with --http: serve the older SSE transport at /sse"
    )
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("--journal", type=Path, required=True)
    parser.add_argument("--require-header", help="NAME=VALUE every call must carry")
    parser.add_argument("--site", help="a site-packages directory to import the SDK from")
    options = parser.parse_args()
    required = tuple(options.require_header.split("=", 1)) if options.require_header else None
    server = build(options.journal, required)  # type: ignore[arg-type]
    if options.stdio:
        server.run("stdio")
        return
    server.settings.port = options.http
    server.run("sse" if options.sse else "streamable-http")


if __name__ == "__main__":
    main()
