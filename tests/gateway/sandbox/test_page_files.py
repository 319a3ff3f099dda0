"""Sharing a file from the sandbox page: stored in the fake Slack as Slack would, served at its
url_private with the bot token, and sent to `web` in both events, as Slack sends a file_share."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import httpx
import pytest

from agent.testing import LocalServer, QuietHandler
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.page import PageError, SandboxPage
from gateway.sandbox.stack import BOT_TOKEN

CHANNEL = "C0SANDBOX1"


class Received:
    def __init__(self) -> None:
        self.events: list[dict] = []
        self.url = ""


@pytest.fixture
def received() -> Iterator[Received]:
    """A stand-in for web's /slack/events that keeps every event it is sent."""
    seen = Received()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.events.append(json.loads(body)["event"])
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = LocalServer(Handler, "events")
    server.start()
    host, port = server.address
    seen.url = f"http://{host}:{port}/slack/events"
    yield seen
    server.stop()


def test_a_file_shared_from_the_page_reaches_web_in_both_events(fake_slack: FakeSlack, received: Received):
    page = SandboxPage(fake_slack, received.url, "secret")
    content = base64.b64encode(b"line one\n").decode()
    channel = next(iter(page.channels))

    said = page.say(channel, "@agent read this", files=[{"name": "log.txt", "content": content}])

    mention, message = received.events
    assert said["statuses"] == [200, 200]
    assert (mention["type"], message["type"], message["subtype"]) == ("app_mention", "message", "file_share")
    shared = message["files"][0]
    assert mention["files"] == message["files"]
    assert (shared["name"], shared["mimetype"]) == ("log.txt", "text/plain")
    fetched = httpx.get(shared["url_private_download"], headers={"Authorization": f"Bearer {BOT_TOKEN}"})
    assert fetched.content == b"line one\n"


@pytest.mark.parametrize(
    "files", [{"name": "x"}, [{"content": "eA=="}], [{"name": "x", "content": "not base64!"}], [{}] * 11]
)
def test_files_the_page_cannot_share_are_refused(fake_slack: FakeSlack, received: Received, files):
    page = SandboxPage(fake_slack, received.url, "secret")
    with pytest.raises(PageError):
        page.say(next(iter(page.channels)), "hi", files=files)
    assert received.events == []
