"""http_get on a real worker reaches public addresses and what HTTP_GET_ALLOW_HOSTS opens, only.

The fake model asks for the worker's own Redis, the cloud metadata address and a local
listener under several spellings; every call comes back to the model as a refusal and the
listener counts zero connections. With a local server opened in the settings, it is fetched,
and its redirect to a port the settings do not open is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from agent.projection.rendering import TOOL_ERROR_STATUS
from agent.testing import FakeLLM, calls, text
from tests.e2e.turns import Session
from tests.listeners import ConnectionCounter, RecordingServer
from tests.polling import wait_for

PUBLIC_ONLY = "; http_get reaches only public addresses"


def refused(why: str) -> str:
    """The refusal as the model reads it in its next request."""
    return f'{TOOL_ERROR_STATUS}\nTool "http_get" failed: refused: {why}{PUBLIC_ONLY}'


def tool_results(request: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def fetch_all(fake_llm: FakeLLM, redis, fake_slack, urls: dict[str, str]) -> dict[str, str]:
    """One turn whose model calls http_get on each URL; what the model got back, by call id."""
    fake_llm.script(calls(*((call, "http_get", {"url": url}) for call, url in urls.items())), text("done"))
    session = Session(redis, fake_slack, "fetch these")
    wait_for(lambda: "done" in session.bot_texts(), what="the answer")
    return tool_results(fake_llm.accepted()[1])


@pytest.fixture
def listener() -> Iterator[ConnectionCounter]:
    with ConnectionCounter() as counting:
        yield counting


def test_internal_addresses_are_refused_and_never_connected(
    make_stack, redis, redis_url, fake_slack, fake_llm: FakeLLM, listener: ConnectionCounter
):
    make_stack()  # HTTP_GET_ALLOW_HOSTS unset: public addresses only
    redis_port = urlsplit(redis_url).port
    results = fetch_all(fake_llm, redis, fake_slack, {
        "redis": f"http://127.0.0.1:{redis_port}/",
        "metadata": "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "hex": f"http://0x7f000001:{listener.port}/",
        "mapped": f"http://[::ffff:127.0.0.1]:{listener.port}/",
        "short": f"http://127.1:{listener.port}/",
    })  # fmt: skip
    assert results == {
        "redis": refused("127.0.0.1 is a loopback address"),
        "metadata": refused("169.254.169.254 is a link-local address"),
        "hex": refused("0x7f000001 resolves to 127.0.0.1, a loopback address"),
        "mapped": refused("::ffff:127.0.0.1 is an IPv4-mapped spelling of 127.0.0.1, a loopback address"),
        "short": refused("127.1 resolves to 127.0.0.1, a loopback address"),
    }
    assert listener.connections == 0


def test_an_opened_host_is_fetched_and_its_redirect_elsewhere_refused(
    make_stack, redis, fake_slack, fake_llm: FakeLLM, listener: ConnectionCounter
):
    routes = {
        "/page": (200, {}, b"internal wiki"),
        "/away": (302, {"Location": f"http://127.0.0.1:{listener.port}/"}, b""),
    }
    with RecordingServer(routes) as server:
        make_stack(HTTP_GET_ALLOW_HOSTS=f"127.0.0.1:{server.port}")
        results = fetch_all(
            fake_llm, redis, fake_slack, {"page": f"{server.url}/page", "away": f"{server.url}/away"}
        )
    assert results["page"].endswith("\n\ninternal wiki")
    redirected = f" (redirected from {server.url}/away)"
    assert results["away"] == refused("127.0.0.1 is a loopback address") + redirected
    assert sorted(server.requests) == [
        ("/away", f"127.0.0.1:{server.port}"),
        ("/page", f"127.0.0.1:{server.port}"),
    ]
    assert listener.connections == 0
