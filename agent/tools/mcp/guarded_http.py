"""The HTTP an MCP client speaks, held to http_get's address policy on every request.

An MCP server's URL comes from the deployment, but the requests the SDK makes follow what the
server says (its session endpoint, a same-origin redirect), and a name may resolve elsewhere
tomorrow. So each request is checked as http_get checks its own (agent.tools.builtin._http_hops):
the host is resolved once, every address it resolves to must be public or opened, and the request
is sent to that checked address with the name kept in the Host header and as the TLS server name.
"""

from __future__ import annotations

import httpx

from agent.tools.builtin._http_hops import Resolver, checked_hop, system_resolver
from agent.tools.builtin.common import ToolError
from agent.tools.builtin.http_policy import HttpGetPolicy

RESOLVE_TIMEOUT_S = 10.0


class RefusedAddress(httpx.ConnectError):
    """The request's host is not one this server entry may reach."""


class GuardedTransport(httpx.AsyncBaseTransport):
    def __init__(self, policy: HttpGetPolicy, resolver: Resolver = system_resolver) -> None:
        self._policy = policy
        self._resolver = resolver
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            hop = await checked_hop(str(request.url), self._policy, self._resolver, RESOLVE_TIMEOUT_S)
        except ToolError as error:
            said = str(error).replace("http_get reaches only", "an MCP server is reached at")
            raise RefusedAddress(said, request=request) from None
        address = hop.addresses[0]
        request.headers["Host"] = hop.request(address).headers["Host"]
        if hop.host != str(address):
            request.extensions = {**request.extensions, "sni_hostname": hop.host}
        request.url = request.url.copy_with(host=str(address))
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
