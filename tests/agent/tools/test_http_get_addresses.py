"""http_get reaches public addresses only: every SSRF spelling is refused before a connection.

The spelling matrix runs the real tool with the real resolver (getaddrinfo) on a transport that
records every request it is handed: a refusal means nothing reached it. The loopback spellings
also run on the real network stack against a local listener, which must count zero connections.
"""

from __future__ import annotations

import socket

import httpx
import pytest

from agent.tools.builtin import HttpGet
from agent.tools.builtin._addresses import non_public_reason, parse_address
from agent.tools.builtin.http_policy import HttpGetPolicy
from tests.agent.tools.helpers import call, executor_with, run_one
from tests.listeners import ConnectionCounter, RecordingServer

pytestmark = pytest.mark.anyio
PUBLIC_ONLY = "; http_get reaches only public addresses"


class Tripwire(httpx.AsyncBaseTransport):
    """Records every request instead of sending it; answers 200 so a leak shows as success."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, text="reached")


async def fetch(tool: HttpGet, url: str, tmp_path) -> str:
    result = await run_one(executor_with(tool, workspace=tmp_path), call("h", "http_get", {"url": url}))
    return result.output


def refused(text: str) -> str:
    return f'Tool "http_get" failed: refused: {text}{PUBLIC_ONLY}'


LOOPBACK = "127.0.0.1, a loopback address"
# Where /etc/hosts lists `::1 localhost` first (Debian's own does), localhost resolves to ::1.
LOCALHOST = socket.getaddrinfo("localhost", 80, type=socket.SOCK_STREAM)[0][4][0]
METADATA = "169.254.169.254, a link-local address"
SPELLINGS = [
    ("http://127.0.0.1:6379/", "127.0.0.1 is a loopback address"),
    ("http://localhost/", f"localhost resolves to {LOCALHOST}, a loopback address"),
    ("http://LOCALHOST./", f"localhost resolves to {LOCALHOST}, a loopback address"),
    ("http://0x7f000001/", "0x7f000001 resolves to 127.0.0.1, a loopback address"),
    ("http://2130706433/", "2130706433 resolves to 127.0.0.1, a loopback address"),
    ("http://0177.0.0.1/", "0177.0.0.1 resolves to 127.0.0.1, a loopback address"),
    ("http://017700000001/", "017700000001 resolves to 127.0.0.1, a loopback address"),
    ("http://127.1/", "127.1 resolves to 127.0.0.1, a loopback address"),
    ("http://0x7f.1/", "0x7f.1 resolves to 127.0.0.1, a loopback address"),
    ("http://[::1]/", "::1 is a loopback address"),
    ("http://[::ffff:127.0.0.1]/", f"::ffff:127.0.0.1 is an IPv4-mapped spelling of {LOOPBACK}"),
    ("http://[::ffff:7f00:1]/", f"::ffff:7f00:1 is an IPv4-mapped spelling of {LOOPBACK}"),
    ("http://[::127.0.0.1]/", f"::127.0.0.1 is an IPv4-compatible spelling of {LOOPBACK}"),
    ("http://[2002:7f00:1::]/", f"2002:7f00:1:: is a 6to4 spelling of {LOOPBACK}"),
    ("http://[64:ff9b::a9fe:a9fe]/", f"64:ff9b::a9fe:a9fe is a NAT64 spelling of {METADATA}"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    ("http://[::ffff:169.254.169.254]/", f"::ffff:169.254.169.254 is an IPv4-mapped spelling of {METADATA}"),
    ("http://2852039166/", "2852039166 resolves to 169.254.169.254, a link-local address"),
    ("http://[fe80::1]/", "fe80::1 is a link-local address"),
    ("http://[fe80::1%25lo]/", "fe80::1%25lo is a link-local address"),
    ("http://10.0.0.1/", "10.0.0.1 is a private address"),
    ("http://172.16.5.4/", "172.16.5.4 is a private address"),
    ("http://192.168.1.1/", "192.168.1.1 is a private address"),
    ("http://[fd12:3456::1]/", "fd12:3456::1 is a private (unique local) address"),
    ("http://100.64.0.1/", "100.64.0.1 is a carrier-grade NAT (shared) address"),
    ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
    ("http://[ff02::1]/", "ff02::1 is a multicast address"),
    ("http://0.0.0.0/", "0.0.0.0 is an unspecified address"),
    ("http://0/", "0 resolves to 0.0.0.0, an unspecified address"),
    ("http://[::]/", ":: is an unspecified address"),
    ("http://255.255.255.255/", "255.255.255.255 is a broadcast address"),
    ("http://240.0.0.1/", "240.0.0.1 is a reserved address"),
    ("http://192.0.2.1/", "192.0.2.1 is a documentation address"),
    ("http://[2001:db8::1]/", "2001:db8::1 is a documentation address"),
    ("http://198.18.0.1/", "198.18.0.1 is a benchmarking address"),
    ("https://127.0.0.1/", "127.0.0.1 is a loopback address"),
]  # fmt: skip


@pytest.mark.parametrize(("url", "why"), SPELLINGS)
async def test_every_ssrf_spelling_is_refused_before_any_request(tmp_path, url, why):
    tripwire = Tripwire()
    assert await fetch(HttpGet(transport=tripwire), url, tmp_path) == refused(why)
    assert tripwire.requests == []


LOOPBACK_SPELLINGS = [
    "127.0.0.1", "localhost", "0x7f000001", "2130706433", "0177.0.0.1", "127.1", "0x7f.1",
    "[::ffff:127.0.0.1]",
]  # fmt: skip


async def test_loopback_spellings_never_connect_to_a_local_listener(tmp_path):
    with ConnectionCounter() as listener:
        for host in LOOPBACK_SPELLINGS:
            output = await fetch(HttpGet(), f"http://{host}:{listener.port}/", tmp_path)
            assert output.startswith('Tool "http_get" failed: refused: ') and "a loopback address" in output
        assert listener.connections == 0


async def test_one_private_address_among_public_ones_refuses_the_host(tmp_path):
    tripwire = Tripwire()
    tool = HttpGet(
        resolver=lambda host, port: ["93.184.215.14", "2606:4700::1111", "10.1.2.3"], transport=tripwire
    )
    output = await fetch(tool, "http://mixed.example/", tmp_path)
    assert output == refused("mixed.example resolves to 10.1.2.3, a private address")
    assert tripwire.requests == []


async def test_a_name_that_does_not_resolve_is_a_clear_error(tmp_path):
    output = await fetch(HttpGet(transport=Tripwire()), "http://no-such-host.invalid/", tmp_path)
    assert output == 'Tool "http_get" failed: Cannot resolve no-such-host.invalid.'


async def test_public_addresses_are_fetched_from_the_checked_address(tmp_path):
    tripwire = Tripwire()
    tool = HttpGet(resolver=lambda host, port: ["93.184.215.14"], transport=tripwire)
    assert "\n\nreached" in await fetch(tool, "https://example.com/page?q=1#top", tmp_path)
    [request] = tripwire.requests
    assert str(request.url) == "https://93.184.215.14/page?q=1"
    assert request.headers["host"] == "example.com"
    assert request.extensions["sni_hostname"] == "example.com"


# Where Python 3.11's `is_global` says "global" (before the fixes some distributions carry) and a
# fetch must still be refused, whatever the Python says.
IS_GLOBAL_MISSES = {
    "224.0.0.1": "a multicast address",
    "233.252.0.1": "a multicast address",
    "ff0e::1": "a multicast address",
    "192.88.99.1": "a reserved (6to4 relay) address",
    "fec0::1": "a site-local address",
    "3fff::1": "a documentation address",
    "::127.0.0.1": "an IPv4-compatible spelling of 127.0.0.1, a loopback address",
    "::8.8.8.8": "a reserved address",
    "::ffff:0:7f00:1": "an IPv4-translated spelling of 127.0.0.1, a loopback address",
    "2002:a9fe:a9fe::": "a 6to4 spelling of 169.254.169.254, a link-local address",
    "64:ff9b::7f00:1": "a NAT64 spelling of 127.0.0.1, a loopback address",
    "64:ff9b:1::1": "a reserved (local NAT64) address",
    "5f00::1": "a reserved address",
}


@pytest.mark.parametrize(("text", "why"), IS_GLOBAL_MISSES.items())
def test_what_is_global_misses_is_refused(text, why):
    assert non_public_reason(parse_address(text)) == why


@pytest.mark.parametrize(
    "text", ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::"]
)
def test_public_addresses_and_their_ipv4_spellings_pass(text):
    assert non_public_reason(parse_address(text)) is None


async def test_an_opened_address_is_reached_on_its_port_only(tmp_path):
    with RecordingServer({"/": (200, {}, b"internal")}) as server, ConnectionCounter() as other:
        tool = HttpGet(HttpGetPolicy.from_allowlist(f"127.0.0.1:{server.port}"))
        assert (await fetch(tool, f"{server.url}/", tmp_path)).endswith("\n\ninternal")
        output = await fetch(tool, f"http://127.0.0.1:{other.port}/", tmp_path)
        assert output == refused("127.0.0.1 is a loopback address")
        assert other.connections == 0


async def test_a_host_name_opening_opens_that_name_not_its_address(tmp_path):
    with RecordingServer({"/": (200, {}, b"wiki")}) as server:
        tool = HttpGet(
            HttpGetPolicy.from_allowlist("Wiki.Internal"), resolver=lambda host, port: ["127.0.0.1"]
        )
        assert (await fetch(tool, f"http://wiki.internal:{server.port}/", tmp_path)).endswith("\n\nwiki")
        assert server.requests == [("/", f"wiki.internal:{server.port}")]
        output = await fetch(tool, f"http://other.internal:{server.port}/", tmp_path)
        assert output == refused("other.internal resolves to 127.0.0.1, a loopback address")
        assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("entry", "opened", "closed"),
    [
        ("10.0.0.0/8", ("10.9.8.7", 80), ("172.16.0.1", 80)),
        ("10.0.0.0/8:8080", ("10.9.8.7", 8080), ("10.9.8.7", 80)),
        ("fd00::/8", ("fd12::1", 443), ("fe80::1", 443)),
        ("[::1]:8080", ("::1", 8080), ("::1", 80)),
        ("::1", ("::1", 80), ("::2", 80)),
    ],
)
def test_allowlist_entries(entry, opened, closed):
    policy = HttpGetPolicy.from_allowlist(f" {entry} ,")
    assert policy.refusal("any.host", opened[1], parse_address(opened[0])) is None
    assert policy.refusal("any.host", closed[1], parse_address(closed[0])) is not None


@pytest.mark.parametrize("entry", ["a b", "host:99999", "host:x", "http://host", "[::1", "a..b", "user@host"])
def test_allowlist_entries_that_are_not_valid_are_refused(entry):
    with pytest.raises(ValueError, match="not a"):
        HttpGetPolicy.from_allowlist(f"127.0.0.1, {entry}")
