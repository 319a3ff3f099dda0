"""What http_get may reach: public addresses, plus the internal hosts an operator opened.

A URL the model chose must not reach the worker's own network (cloud metadata, Redis, admin
ports), so every address a host resolves to is checked, not just the first. The caller (the
jobs layer, from its settings) opens named internal hosts with an allowlist:

- a host name (`wiki.internal`): whatever it resolves to, so it trusts that name's DNS;
- an address (`10.0.0.5`, `[fd00::5]`) or a network (`10.1.0.0/16`): those addresses, by
  any name;
- any of these with a port (`wiki.internal:8080`, `127.0.0.1:6380`, `[::1]:80`) opens only
  that port.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, ip_network

from agent.tools.builtin._addresses import IPAddress, non_public_reason


@dataclass(frozen=True)
class Opening:
    """One allowlist entry: a host name or a network, on one port or all."""

    host: str | None = None
    network: IPv4Network | IPv6Network | None = None
    port: int | None = None

    def opens(self, host: str, port: int, address: IPAddress) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.host is not None:
            return self.host == host
        assert self.network is not None
        return address.version == self.network.version and address in self.network


@dataclass(frozen=True)
class HttpGetPolicy:
    """The default (no openings) reaches public addresses only."""

    openings: tuple[Opening, ...] = ()

    @classmethod
    def from_allowlist(cls, text: str) -> HttpGetPolicy:
        """Comma-separated entries; ValueError names the first one that is not valid."""
        return cls(tuple(parse_opening(entry.strip()) for entry in text.split(",") if entry.strip()))

    def refusal(self, host: str, port: int, address: IPAddress) -> str | None:
        """Why `host` may not be reached at `address` ("a loopback address"), or None if it may."""
        if any(opening.opens(host, port, address) for opening in self.openings):
            return None
        return non_public_reason(address)


def normal_host(host: str) -> str:
    """A host name as compared and sent: lower case, ASCII (IDNA), no trailing dot."""
    try:
        return host.rstrip(".").encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise ValueError(f"not a valid host name: {host!r}") from None


def parse_opening(entry: str) -> Opening:
    network = _network(entry)  # a bare IPv6 address or network never carries a port
    if network is not None:
        return Opening(network=network)
    host, port = _split_port(entry)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    network = _network(host)
    if network is not None:
        return Opening(network=network, port=port)
    if not host or any(char in host for char in "/[]@ :"):
        raise ValueError(f"not a host name, address or network: {entry!r}")
    return Opening(host=normal_host(host), port=port)


def _network(text: str) -> IPv4Network | IPv6Network | None:
    try:
        return ip_network(text, strict=False)
    except ValueError:
        return None


def _split_port(entry: str) -> tuple[str, int | None]:
    host, colon, port = entry.rpartition(":")
    if not colon or host.endswith(":"):
        return entry, None
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"not a port number in {entry!r}")
    return host, int(port)
