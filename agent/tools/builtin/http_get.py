"""http_get: fetch a URL over http or https, bounded in time and size."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
from pydantic import Field

from agent.tools import accesses as acc
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError
from agent.tools.defaults import (
    HTTP_DEFAULT_MAX_BYTES,
    HTTP_DEFAULT_TIMEOUT_S,
    HTTP_MAX_BYTES,
    HTTP_MAX_TIMEOUT_S,
)

ALLOWED_SCHEMES = frozenset({"http", "https"})
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "+json", "+xml")


class HttpGetParams(Params):
    url: str = Field(description="The http:// or https:// URL to fetch.")
    timeout: int = Field(
        default=HTTP_DEFAULT_TIMEOUT_S, ge=1, le=HTTP_MAX_TIMEOUT_S, description="Seconds before giving up."
    )
    max_bytes: int = Field(
        default=HTTP_DEFAULT_MAX_BYTES, ge=1, le=HTTP_MAX_BYTES, description="Most body bytes to read."
    )


def _check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme.lower() not in ALLOWED_SCHEMES or not parts.hostname:
        raise ToolError(f"Only http and https URLs can be fetched, not {url!r}.")


def _is_text(content_type: str) -> bool:
    kind = content_type.split(";")[0].strip().lower()
    return not kind or any(marker in kind for marker in TEXT_TYPES)


async def _read_body(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            return bytes(body[:limit]), True
    return bytes(body), False


def _render(response: httpx.Response, body: bytes, cut: bool, limit: int) -> ToolResult:
    content_type = response.headers.get("content-type", "")
    lines = [f"status: {response.status_code} {response.reason_phrase}".rstrip(), f"url: {response.url}"]
    if content_type:
        lines.append(f"content-type: {content_type}")
    if not _is_text(content_type):
        lines += ["", f"[{len(body)}{'+' if cut else ''} bytes of non-text content not shown]"]
        return ToolResult("\n".join(lines), is_error=response.is_error)
    text = body.decode(response.encoding or "utf-8", errors="replace")
    lines += ["", text]
    if cut:
        lines.append(f"[body cut at {limit} bytes]")
    return ToolResult("\n".join(lines), is_error=response.is_error)


class HttpGet(Tool[HttpGetParams]):
    name = "http_get"
    description = (
        "Fetch a URL with an HTTP GET (http and https only, redirects followed) and return the status, "
        "the content type and the body as text (bounded by max_bytes; non-text bodies are not shown)."
    )
    parameters = HttpGetParams
    requires_approval = True  # the one way out of a sandboxed session: a URL can carry files away

    def __init__(self, transport: httpx.AsyncBaseTransport | None = None, *, trust_env: bool = True) -> None:
        self._transport = transport
        self._trust_env = trust_env

    def resolve_execution(self, args: HttpGetParams, context: ToolContext) -> ToolExecution:
        _check_url(args.url)
        return ToolExecution(run=lambda: self.run(args, context), accesses=acc.none())

    async def run(self, args: HttpGetParams, context: ToolContext) -> ToolResult:
        _check_url(args.url)
        async with httpx.AsyncClient(
            transport=self._transport, timeout=args.timeout, follow_redirects=True, trust_env=self._trust_env
        ) as client:
            try:
                async with client.stream("GET", args.url) as response:
                    body, cut = await _read_body(response, args.max_bytes)
            except httpx.TimeoutException:
                raise ToolError(f"GET {args.url} timed out after {args.timeout} seconds.") from None
            except httpx.HTTPError as error:
                raise ToolError(f"GET {args.url} failed: {error}") from None
        return _render(response, body, cut, args.max_bytes)
