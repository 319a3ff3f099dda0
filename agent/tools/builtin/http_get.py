"""http_get: fetch a URL over http or https, bounded in time and size, public addresses only.

Each request (the first and every redirect) is resolved, checked and pinned to a checked
address by `_http_hops`; what counts as reachable is the caller's `HttpGetPolicy` (public
addresses, plus what the operator opened). Redirects are followed here, not by httpx, so each
hop is checked the same way. Proxy variables and ~/.netrc are ignored (trust_env=False): a
proxy would resolve the name again, out of reach of the check, and .netrc would hand the
worker's credentials to any host the model names.
"""

from __future__ import annotations

from urllib.parse import urljoin

import httpx
from pydantic import Field

from agent.tools import accesses as acc
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin._http_hops import Hop, Resolver, check_url, checked_hop, system_resolver
from agent.tools.builtin.common import Params, ToolError
from agent.tools.builtin.http_policy import HttpGetPolicy
from agent.tools.defaults import (
    HTTP_DEFAULT_MAX_BYTES,
    HTTP_DEFAULT_TIMEOUT_S,
    HTTP_MAX_BYTES,
    HTTP_MAX_TIMEOUT_S,
)

TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "+json", "+xml")
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 10


class HttpGetParams(Params):
    url: str = Field(description="The http:// or https:// URL to fetch.")
    timeout: int = Field(
        default=HTTP_DEFAULT_TIMEOUT_S, ge=1, le=HTTP_MAX_TIMEOUT_S, description="Seconds before giving up."
    )
    max_bytes: int = Field(
        default=HTTP_DEFAULT_MAX_BYTES, ge=1, le=HTTP_MAX_BYTES, description="Most body bytes to read."
    )


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


def _render(url: str, response: httpx.Response, body: bytes, cut: bool, limit: int) -> ToolResult:
    content_type = response.headers.get("content-type", "")
    lines = [f"status: {response.status_code} {response.reason_phrase}".rstrip(), f"url: {url}"]
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


def _redirect_target(url: str, response: httpx.Response) -> str | None:
    location: str | None = response.headers.get("location")
    if response.status_code not in REDIRECTS or not location:
        return None
    return urljoin(url, location)


class HttpGet(Tool[HttpGetParams]):
    name = "http_get"
    description = (
        "Fetch a URL with an HTTP GET (http and https only, redirects followed) and return the status, "
        "the content type and the body as text (bounded by max_bytes; non-text bodies are not shown). "
        "Only public internet addresses can be reached."
    )
    parameters = HttpGetParams
    requires_approval = True  # the one way out of a sandboxed session: a URL can carry files away

    def __init__(
        self,
        policy: HttpGetPolicy | None = None,
        *,
        resolver: Resolver = system_resolver,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._policy = policy or HttpGetPolicy()
        self._resolver = resolver
        self._transport = transport

    def resolve_execution(self, args: HttpGetParams, context: ToolContext) -> ToolExecution:
        check_url(args.url)
        return ToolExecution(run=lambda: self.run(args, context), accesses=acc.none())

    async def run(self, args: HttpGetParams, context: ToolContext) -> ToolResult:
        url, previous = args.url, None
        for _ in range(MAX_REDIRECTS + 1):
            hop = await self._checked(url, previous, args.timeout)
            try:
                result, url = await self._fetch(hop, args)
            except httpx.TimeoutException:
                raise ToolError(f"GET {hop.url} timed out after {args.timeout} seconds.") from None
            except (httpx.HTTPError, httpx.InvalidURL) as error:
                raise ToolError(f"GET {hop.url} failed: {error}") from None
            if result is not None:
                return result
            previous = hop.url
        raise ToolError(f"GET {args.url} stopped after {MAX_REDIRECTS} redirects.")

    async def _checked(self, url: str, redirected_from: str | None, timeout: float) -> Hop:
        try:
            return await checked_hop(url, self._policy, self._resolver, timeout)
        except ToolError as error:
            if redirected_from is None:
                raise
            raise ToolError(f"{error} (redirected from {redirected_from})") from None

    async def _fetch(self, hop: Hop, args: HttpGetParams) -> tuple[ToolResult | None, str]:
        """The rendered response, or None and where it redirects to."""
        # A client per hop: a connection made for one host name is never reused for another.
        async with httpx.AsyncClient(
            transport=self._transport, timeout=args.timeout, trust_env=False
        ) as client:
            response = await self._send(client, hop)
            try:
                target = _redirect_target(hop.url, response)
                if target is not None:
                    return None, target
                body, cut = await _read_body(response, args.max_bytes)
                return _render(hop.url, response, body, cut, args.max_bytes), hop.url
            finally:
                await response.aclose()

    async def _send(self, client: httpx.AsyncClient, hop: Hop) -> httpx.Response:
        """Try the checked addresses in order until one connects."""
        for address in hop.addresses[:-1]:
            try:
                return await client.send(hop.request(address), stream=True)
            except httpx.ConnectError:
                continue
        return await client.send(hop.request(hop.addresses[-1]), stream=True)
