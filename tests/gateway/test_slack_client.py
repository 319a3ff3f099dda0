"""Slack's error answers are summarised where the client raises them: status and error code."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from slack_sdk.errors import SlackApiError

from agent.testing import LocalServer, QuietHandler
from gateway.sandbox.fake_slack import FakeSlack, Fault
from gateway.sandbox.stack import BOT_TOKEN
from gateway.slack_client import web_client
from jobs.settings import Settings

SECRET = "planted-slack-body-secret-91e0"


def client_for(api_url: str):
    return web_client(Settings.load(SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_API_URL=api_url), retry_handlers=[])


def test_an_error_answer_keeps_its_code_and_status_and_loses_its_body(fake_slack: FakeSlack):
    metadata = {"response_metadata": {"messages": [f"[ERROR] blocks quoted back: {SECRET}"]}}
    fake_slack.inject(Fault("chat.postMessage", status=500, error="fatal_error", extra=metadata))
    with pytest.raises(SlackApiError) as raised:
        client_for(fake_slack.api_url).chat_postMessage(channel="C111", text="hello")
    error = raised.value
    assert str(error) == "Slack chat.postMessage failed: HTTP 500 (fatal_error)"
    assert error.response.get("error") == "fatal_error" and error.response.status_code == 500
    for shown in (str(error), repr(error), str(error.response), repr(error.__context__)):
        assert SECRET not in shown


def test_a_plain_slack_error_is_still_branchable_by_code(fake_slack: FakeSlack):
    with pytest.raises(SlackApiError) as raised:
        client_for(fake_slack.api_url).chat_update(channel="C111", ts="1.000001", text="x")
    assert raised.value.response.get("error") == "message_not_found"
    assert str(raised.value) == "Slack chat.update failed: HTTP 200 (message_not_found)"


class _ProxyErrorPage(QuietHandler):
    def do_POST(self) -> None:
        page = f"<html><body>502 from the proxy; upstream said {SECRET}</body></html>".encode()
        self.send_response(502)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)


@pytest.fixture
def error_page_url() -> Iterator[str]:
    server = LocalServer(_ProxyErrorPage, "proxy-error-page")
    server.start()
    yield "http://{}:{}/api/".format(*server.address)
    server.stop()


def test_an_answer_that_is_not_json_is_neither_logged_nor_raised_whole(error_page_url: str, caplog):
    with caplog.at_level(logging.DEBUG), pytest.raises(SlackApiError) as raised:
        client_for(error_page_url).chat_postMessage(channel="C111", text="hello")
    assert str(raised.value) == "Slack chat.postMessage failed: HTTP 502 (unexpected_response)"
    assert raised.value.response.get("error") == "unexpected_response"
    assert any("Failed to decode Slack API response" in r.getMessage() for r in caplog.records)
    assert all(SECRET not in r.getMessage() for r in caplog.records)


def test_debug_lines_name_the_call_but_not_what_was_posted_or_answered(fake_slack: FakeSlack, caplog):
    with caplog.at_level(logging.DEBUG, logger="gateway.slack_client.sdk"):
        client_for(fake_slack.api_url).chat_postMessage(channel="C111", text=f"the answer: {SECRET}")
    lines = [r.getMessage() for r in caplog.records if r.name == "gateway.slack_client.sdk"]
    assert any("chat.postMessage" in line for line in lines)
    assert any(line.startswith("Received the following response - status: 200") for line in lines)
    assert all(SECRET not in line for line in lines)
