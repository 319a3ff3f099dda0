"""Every hop of http_get is checked, and goes to the address that was checked.

Redirects are followed by the tool and each target is resolved and checked like the first;
the connection is made to the checked IP, so a resolver that answers differently the second
time (DNS rebinding) changes nothing; TLS still verifies the certificate for the host name.
"""

from __future__ import annotations

import ssl
import subprocess
from collections.abc import Iterator

import httpx
import pytest

from agent.tools.builtin import HttpGet
from agent.tools.builtin.http_policy import HttpGetPolicy
from tests.agent.tools.helpers import call, executor_with, run_one
from tests.listeners import ConnectionCounter, RecordingServer

pytestmark = pytest.mark.anyio
PUBLIC_ONLY = "; http_get reaches only public addresses"


async def fetch(tool: HttpGet, url: str, tmp_path) -> str:
    result = await run_one(executor_with(tool, workspace=tmp_path), call("h", "http_get", {"url": url}))
    return result.output


def refused(text: str) -> str:
    return f'Tool "http_get" failed: refused: {text}{PUBLIC_ONLY}'


def redirect(location: str) -> tuple[int, dict[str, str], bytes]:
    return 302, {"Location": location}, b""


@pytest.fixture
def forbidden() -> Iterator[ConnectionCounter]:
    """A local port nothing opens: every redirect to it must be refused."""
    with ConnectionCounter() as listener:
        yield listener


@pytest.fixture
def server(forbidden: ConnectionCounter) -> Iterator[RecordingServer]:
    b = forbidden.port
    routes = {
        "/text": (200, {}, b"hello"),
        "/dir/relative": redirect("../text"),
        "/to-forbidden": redirect(f"http://127.0.0.1:{b}/"),
        "/to-forbidden-hex": redirect(f"http://0x7f000001:{b}/"),
        "/to-forbidden-v6": redirect(f"http://[::ffff:127.0.0.1]:{b}/"),
        "/scheme-relative": redirect(f"//127.0.0.1:{b}/x"),
        "/to-metadata": redirect("http://169.254.169.254/latest/meta-data/"),
        "/to-file": redirect("file:///etc/passwd"),
        "/loop": redirect("/loop"),
    }
    with RecordingServer(routes) as running:
        yield running


@pytest.fixture
def tool(server: RecordingServer) -> HttpGet:
    return HttpGet(HttpGetPolicy.from_allowlist(f"127.0.0.1:{server.port}"))  # its port only


async def test_a_relative_redirect_is_resolved_against_the_current_url(tool, server, tmp_path):
    output = await fetch(tool, f"{server.url}/dir/relative", tmp_path)
    assert output == f"status: 200 OK\nurl: {server.url}/text\ncontent-type: text/plain\n\nhello"


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/to-forbidden", "127.0.0.1 is a loopback address"),
        ("/to-forbidden-hex", "0x7f000001 resolves to 127.0.0.1, a loopback address"),
        ("/to-forbidden-v6", "::ffff:127.0.0.1 is an IPv4-mapped spelling of 127.0.0.1, a loopback address"),
        ("/scheme-relative", "127.0.0.1 is a loopback address"),
        ("/to-metadata", "169.254.169.254 is a link-local address"),
    ],
)
async def test_a_redirect_to_an_unopened_address_is_refused(tool, server, forbidden, tmp_path, path, why):
    output = await fetch(tool, f"{server.url}{path}", tmp_path)
    assert output == refused(why) + f" (redirected from {server.url}{path})"
    assert server.requests == [(path, f"127.0.0.1:{server.port}")]
    assert forbidden.connections == 0


async def test_a_redirect_to_another_scheme_is_refused(tool, server, tmp_path):
    output = await fetch(tool, f"{server.url}/to-file", tmp_path)
    assert output == (
        "Tool \"http_get\" failed: Only http and https URLs can be fetched, not 'file:///etc/passwd'."
        f" (redirected from {server.url}/to-file)"
    )


async def test_redirects_are_bounded(tool, server, tmp_path):
    output = await fetch(tool, f"{server.url}/loop", tmp_path)
    assert output == f'Tool "http_get" failed: GET {server.url}/loop stopped after 10 redirects.'
    assert len(server.requests) == 11


class Rebinding:
    """A resolver seam that answers each call with the next list of addresses."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.calls: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        return self.answers.pop(0)


async def test_the_connection_goes_to_the_checked_address_not_a_second_answer(tmp_path):
    with (
        RecordingServer({"/": (200, {}, b"checked")}) as checked,
        ConnectionCounter("127.0.0.2", checked.port) as rebound,
    ):
        resolver = Rebinding(["127.0.0.1"], ["127.0.0.2"])
        tool = HttpGet(HttpGetPolicy.from_allowlist("127.0.0.1"), resolver=resolver)
        output = await fetch(tool, f"http://rebind.test:{checked.port}/", tmp_path)
        assert output.endswith("\n\nchecked")
        assert checked.requests == [("/", f"rebind.test:{checked.port}")]
        assert resolver.calls == ["rebind.test"] and rebound.connections == 0
        # The next fetch resolves again, gets the unopened address and is refused.
        output = await fetch(tool, f"http://rebind.test:{checked.port}/", tmp_path)
        assert output == refused("rebind.test resolves to 127.0.0.2, a loopback address")
        assert rebound.connections == 0 and len(checked.requests) == 1


async def test_a_rebinding_name_is_checked_again_on_each_redirect_hop(tmp_path):
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(302, headers={"Location": "/next"})

    resolver = Rebinding(["93.184.215.14"], ["127.0.0.1"])
    tool = HttpGet(resolver=resolver, transport=httpx.MockTransport(answer))
    output = await fetch(tool, "https://rebind.example/start", tmp_path)
    assert output == refused("rebind.example resolves to 127.0.0.1, a loopback address") + (
        " (redirected from https://rebind.example/start)"
    )
    [request] = sent  # only the first hop, to the public address it was checked at
    assert str(request.url) == "https://93.184.215.14/start"
    assert request.headers["host"] == "rebind.example"
    assert request.extensions["sni_hostname"] == "rebind.example"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[str, str]:
    """A self-signed certificate for good.test only (no IP address in it)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = str(folder / "cert.pem"), str(folder / "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=good.test",
         "-addext", "subjectAltName=DNS:good.test"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def tls_server(certificate) -> Iterator[RecordingServer]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    with RecordingServer({"/": (200, {}, b"secure")}, tls=context) as running:
        yield running


@pytest.fixture
def tls_tool(certificate) -> HttpGet:
    """Trusts the test certificate; every name resolves to the (opened) loopback server."""
    verify = ssl.create_default_context(cafile=certificate[0])
    return HttpGet(
        HttpGetPolicy.from_allowlist("127.0.0.1"),
        resolver=lambda host, port: ["127.0.0.1"],
        transport=httpx.AsyncHTTPTransport(verify=verify),
    )


async def test_tls_to_the_checked_address_verifies_the_host_name(tls_tool, tls_server, tmp_path):
    url = f"https://good.test:{tls_server.port}/"
    assert (await fetch(tls_tool, url, tmp_path)).endswith("\n\nsecure")
    assert tls_server.server_names == ["good.test"]
    assert tls_server.requests == [("/", f"good.test:{tls_server.port}")]


@pytest.mark.parametrize("host", ["evil.test", "127.0.0.1"])
async def test_a_certificate_for_another_name_is_rejected(tls_tool, tls_server, tmp_path, host):
    url = f"https://{host}:{tls_server.port}/"
    output = await fetch(tls_tool, url, tmp_path)
    assert output.startswith(f'Tool "http_get" failed: GET {url} failed: ')
    assert f"mismatch, certificate is not valid for '{host}'" in output
    assert tls_server.requests == []
