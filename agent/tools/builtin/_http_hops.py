"""One request of http_get (the first or a redirect's): where it goes, checked, and pinned there.

The host is resolved once, every address it resolves to is checked against the policy, and the
request is then sent to a checked address itself (the IP in the URL), with the host name kept
in the Host header and as the TLS server name, so certificate verification still checks the
name. Nothing resolves the name a second time, which closes the DNS-rebinding window between
the check and the connection. Numeric spellings (`0x7f000001`, `2130706433`, `0177.0.0.1`,
`127.1`) need no special case: getaddrinfo turns them into the address they reach.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit, urlunsplit

import httpx

from agent.offload import in_thread
from agent.tools.builtin._addresses import IPAddress, parse_address
from agent.tools.builtin.common import ToolError
from agent.tools.builtin.http_policy import HttpGetPolicy, normal_host

ALLOWED_SCHEMES = frozenset({"http", "https"})
DEFAULT_PORTS = {"http": 80, "https": 443}
# (host, port) -> the addresses getaddrinfo gives, as text; blocking, so it runs in a thread.
Resolver = Callable[[str, int], Sequence[str]]


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def check_url(url: str) -> SplitResult:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError:
        raise ToolError(f"Not a valid URL: {url!r}.") from None
    if parts.scheme.lower() not in ALLOWED_SCHEMES or not parts.hostname:
        raise ToolError(f"Only http and https URLs can be fetched, not {url!r}.")
    return parts


@dataclass(frozen=True)
class Hop:
    """A URL as written, and the checked addresses its request may connect to."""

    url: str
    parts: SplitResult
    host: str
    port: int
    addresses: tuple[IPAddress, ...]

    def request(self, address: IPAddress) -> httpx.Request:
        """GET to `address` itself, addressed to the host name (Host header, TLS SNI)."""
        literal = f"[{address}]" if address.version == 6 else str(address)
        userinfo = self.parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@{literal}:{self.port}" if userinfo else f"{literal}:{self.port}"
        pinned = urlunsplit((self.parts.scheme, netloc, self.parts.path or "/", self.parts.query, ""))
        extensions = {} if _is_address(self.host) else {"sni_hostname": self.host}
        return httpx.Request("GET", pinned, headers={"Host": self._host_header()}, extensions=extensions)

    def _host_header(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        default = DEFAULT_PORTS[self.parts.scheme.lower()]
        return shown if self.port == default else f"{shown}:{self.port}"


async def checked_hop(url: str, policy: HttpGetPolicy, resolver: Resolver, timeout: float) -> Hop:
    """Resolve the URL's host and refuse it unless every address is public or opened."""
    parts = check_url(url)
    assert parts.hostname is not None
    try:
        host = normal_host(parts.hostname)
    except ValueError as error:
        raise ToolError(f"Cannot fetch {url!r}: {error}.") from None
    port = parts.port or DEFAULT_PORTS[parts.scheme.lower()]
    addresses = await _addresses_of(host, port, resolver, timeout)
    for address in addresses:
        reason = policy.refusal(host, port, address)
        if reason is not None:
            raise ToolError(_refused(host, address, reason))
    return Hop(url, parts, host, port, addresses)


def _refused(host: str, address: IPAddress, reason: str) -> str:
    said = f"{host} is {reason}" if _is_address(host) else f"{host} resolves to {address}, {reason}"
    return f"refused: {said}; http_get reaches only public addresses"


async def _addresses_of(host: str, port: int, resolver: Resolver, timeout: float) -> tuple[IPAddress, ...]:
    if _is_address(host):
        return (parse_address(host),)
    try:
        found = await asyncio.wait_for(in_thread(resolver, host, port), timeout)
        addresses = tuple(parse_address(text) for text in found)
    except TimeoutError:
        raise ToolError(f"Resolving {host} timed out after {timeout:g} seconds.") from None
    except (OSError, ValueError):
        raise ToolError(f"Cannot resolve {host}.") from None
    if not addresses:
        raise ToolError(f"Cannot resolve {host}.")
    return addresses


def _is_address(host: str) -> bool:
    try:
        parse_address(host)
    except ValueError:
        return False
    return True
