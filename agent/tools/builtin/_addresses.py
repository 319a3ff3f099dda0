"""Which IP addresses are public: the ones a model-chosen fetch may reach without an opening.

`ipaddress.is_global` is the base, but on Python 3.11 it calls multicast, the 6to4 relay
anycast range, site-local IPv6, 3fff::/20 (documentation) and every IPv4-compatible, 6to4 and
NAT64 spelling of a private address "global". So the answer here is: the named ranges below
are refused with their name; an IPv6 address that embeds an IPv4 one is judged by the IPv4
address it reaches; and whatever remains must be `is_global`, and for IPv6 inside 2000::/3
(global unicast), or it is refused as reserved.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network

IPAddress = IPv4Address | IPv6Address

_NAMED: tuple[tuple[IPv4Network | IPv6Network, str], ...] = tuple(
    (ip_network(network), name)
    for network, name in (
        ("0.0.0.0/32", "an unspecified address"),
        ("0.0.0.0/8", "a reserved ('this network') address"),
        ("127.0.0.0/8", "a loopback address"),
        ("10.0.0.0/8", "a private address"),
        ("172.16.0.0/12", "a private address"),
        ("192.168.0.0/16", "a private address"),
        ("169.254.0.0/16", "a link-local address"),
        ("100.64.0.0/10", "a carrier-grade NAT (shared) address"),
        ("192.0.0.0/24", "a reserved (IETF protocol) address"),
        ("192.0.2.0/24", "a documentation address"),
        ("198.51.100.0/24", "a documentation address"),
        ("203.0.113.0/24", "a documentation address"),
        ("198.18.0.0/15", "a benchmarking address"),
        ("192.88.99.0/24", "a reserved (6to4 relay) address"),
        ("224.0.0.0/4", "a multicast address"),
        ("255.255.255.255/32", "a broadcast address"),
        ("240.0.0.0/4", "a reserved address"),
        ("::/128", "an unspecified address"),
        ("::1/128", "a loopback address"),
        ("fc00::/7", "a private (unique local) address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address"),
        ("ff00::/8", "a multicast address"),
        ("2001:db8::/32", "a documentation address"),
        ("3fff::/20", "a documentation address"),
        ("2001:2::/48", "a benchmarking address"),
        ("100::/64", "a reserved (discard) address"),
        ("2001::/23", "a reserved (IETF protocol) address"),
        ("64:ff9b:1::/48", "a reserved (local NAT64) address"),
    )
)
_GLOBAL_UNICAST_V6 = IPv6Network("2000::/3")
_NAT64 = IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = IPv6Network("::/96")
_IPV4_TRANSLATED = IPv6Network("::ffff:0:0:0/96")


def parse_address(text: str) -> IPAddress:
    """An address as getaddrinfo prints it; an IPv6 zone (`fe80::1%eth0`) is dropped."""
    return ip_address(text.split("%", 1)[0])


def non_public_reason(address: IPAddress) -> str | None:
    """Why `address` is not on the public internet ("a loopback address"), or None if it is."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        spelling, inner = embedded
        inner_reason = non_public_reason(inner)
        if inner_reason is not None:
            return f"{spelling} spelling of {inner}, {inner_reason}"
        if spelling in ("an IPv4-mapped", "a NAT64", "a 6to4"):
            # reaches a public IPv4 address, just as that address would; decided here, not by
            # `is_global`, which calls 2002::/16 global on some Python 3.11 builds and not others
            return None
    for network, name in _NAMED:
        if address.version == network.version and address in network:
            return name
    if not address.is_global or (address.version == 6 and address not in _GLOBAL_UNICAST_V6):
        return "a reserved address"
    return None


def _embedded_ipv4(address: IPAddress) -> tuple[str, IPv4Address] | None:
    """The IPv4 address an IPv6 spelling leads to, with the spelling's name (and its article)."""
    if not isinstance(address, IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return "an IPv4-mapped", address.ipv4_mapped
    if address.sixtofour is not None:
        return "a 6to4", address.sixtofour
    low = IPv4Address(int(address) & 0xFFFF_FFFF)
    if address in _NAT64:
        return "a NAT64", low
    if address in _IPV4_TRANSLATED:
        return "an IPv4-translated", low
    if address in _IPV4_COMPATIBLE and int(address) > 1:  # :: and ::1 are themselves
        return "an IPv4-compatible", low
    return None
