"""Who the bot is (auth.test): a Slack blip at start loses no mention; a bad token stops `web`."""

from __future__ import annotations

import subprocess

import pytest

from agent.testing import FakeLLM, text
from gateway.sandbox.fake_slack import FakeSlack, Fault
from gateway.sandbox.stack import THREADLINE, Stack
from jobs.keys import SessionKey
from tests.e2e.test_bad_input import recorded
from tests.e2e.test_inbound import user_texts
from tests.polling import wait_for
from tests.slack_events import mention
from tests.thread_view import bot_messages
from tests.unattended import UNATTENDED

OUTAGES = {  # until the test says Slack has recovered
    "Slack answers 503": dict(status=503, error="service_unavailable"),
    "Slack is unreachable": dict(hang_up=True),
}


@pytest.mark.parametrize("outage", list(OUTAGES))
def test_a_mention_while_auth_test_fails_is_refused_and_its_retry_starts_the_turn_once(
    make_stack, fake_slack: FakeSlack, fake_llm: FakeLLM, redis, outage
):
    fake_slack.inject(Fault("auth.test", count=1_000, **OUTAGES[outage]))
    stack = make_stack()  # web starts although Slack cannot say who the bot is yet
    root = fake_slack.add_user_message("C111", "<@UBOT0001> hello", user="W222")
    fake_llm.script(text("Hello back."))
    event = mention("hello", ts=root["ts"])

    refused = stack.send_event(event)

    assert refused.status_code == 503, refused.text
    assert recorded(redis) == ([], 0, 0)
    assert "answering 503 so Slack retries" in stack.log("web")
    fake_slack.recover()
    for attempt in (1, 2):  # Slack's retries: the same event, marked as a redelivery
        retry = {"X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": "http_error"}
        assert stack.send_event(event, headers=retry).status_code == 200
    replies = wait_for(lambda: bot_messages(fake_slack, "C111", root["ts"]), what="the answer")
    assert [reply["text"] for reply in replies] == ["Hello back."]
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    assert user_texts(redis, key) == ["<@W222>: hello"]
    assert len(fake_llm.requests) == 1
    assert stack.processes["web"].poll() is None


@pytest.mark.parametrize("error", ["invalid_auth", "token_revoked"])
def test_web_with_an_invalid_bot_token_exits_with_one_line(
    tmp_path, redis, redis_url, fake_slack, fake_llm, error
):
    fake_slack.inject(Fault("auth.test", count=1_000, error=error))
    stack = Stack(tmp_path, redis_url, fake_slack.api_url, fake_llm.base_url, **UNATTENDED)
    web = stack.spawn("web", [THREADLINE, "web"])
    try:
        status = web.wait(timeout=20)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"web kept running with an invalid token:\n{stack.log('web')}") from None
    finally:
        stack.stop()
    lines = stack.log("web").splitlines()
    assert status == 2
    assert len(lines) == 1, lines
    assert "SLACK_BOT_TOKEN" in lines[0] and error in lines[0]
    assert stack.env["SLACK_BOT_TOKEN"] not in lines[0]


def test_a_mention_is_answered_and_auth_test_is_asked_once(stack: Stack, fake_slack: FakeSlack, fake_llm):
    first = fake_slack.add_user_message("C111", "<@UBOT0001> one", user="W222")
    second = fake_slack.add_user_message("C111", "<@UBOT0001> two", user="W222")
    fake_llm.script(text("First."), text("Second."))

    assert stack.send_event(mention("one", ts=first["ts"])).status_code == 200
    wait_for(lambda: bot_messages(fake_slack, "C111", first["ts"]), what="the first answer")
    assert stack.send_event(mention("two", ts=second["ts"])).status_code == 200
    wait_for(lambda: bot_messages(fake_slack, "C111", second["ts"]), what="the second answer")

    assert len(fake_slack.calls("auth.test")) == 1
