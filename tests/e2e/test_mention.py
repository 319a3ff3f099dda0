"""A mention answered in its thread, end to end: signed request → web → Redis → RQ → fake Slack."""

from __future__ import annotations

import time

from agent.testing import FakeLLM, Reply, text
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import Stack
from tests.polling import wait_for
from tests.slack_events import mention


def bot_replies(fake_slack: FakeSlack, channel: str, thread_ts: str) -> list[dict]:
    return [m for m in fake_slack.thread(channel, thread_ts) if m.get("bot_id")]


def test_mention_is_answered_in_its_thread_and_nowhere_else(
    stack: Stack, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    root = fake_slack.add_user_message("C111", "<@UBOT0001> what is 2+2?", user="W222")
    other = fake_slack.add_user_message("C111", "unrelated chatter", user="W333")
    fake_llm.script(text("It is 4."))

    started = time.monotonic()
    response = stack.send_event(mention("what is 2+2?", ts=root["ts"]))
    acknowledged_in = time.monotonic() - started

    assert response.status_code == 200
    assert acknowledged_in < 3.0
    replies = wait_for(lambda: bot_replies(fake_slack, "C111", root["ts"]), what="the answer in the thread")
    assert [r["text"] for r in replies] == ["It is 4."]
    assert replies[0]["thread_ts"] == root["ts"]
    assert bot_replies(fake_slack, "C111", other["ts"]) == []
    assert [m["ts"] for m in fake_slack.channel_messages("C111") if m.get("bot_id")] == [replies[0]["ts"]]
    sent = fake_llm.accepted()[0]["messages"]
    assert sent[-1] == {"role": "user", "content": "<@W222>: what is 2+2?"}


def test_model_http_error_ends_the_turn_with_an_apology_in_the_thread(stack, fake_slack, fake_llm, redis):
    root = fake_slack.add_user_message("C111", "<@UBOT0001> hello", user="W222")
    fake_llm.script(Reply(status=401, error={"error": {"message": "bad key", "type": "auth"}}))

    assert stack.send_event(mention("hello", ts=root["ts"])).status_code == 200

    replies = wait_for(lambda: bot_replies(fake_slack, "C111", root["ts"]), what="the apology")
    assert replies[0]["text"].startswith("Sorry, I could not finish this turn")
    wire = [r for r in _wire(redis, root["ts"]) if r["type"] == "turn.ended"]
    assert wire[-1]["reason"] == "failed" and "401" in wire[-1]["error"]


def test_model_answer_that_is_not_json_is_recorded_and_apologised_for(stack, fake_slack, fake_llm, redis):
    root = fake_slack.add_user_message("C111", "<@UBOT0001> hello", user="W222")
    garbled = Reply(raw_body=b"<html>gateway error</html>")
    fake_llm.script(garbled, garbled)  # a garbled answer is retried once, then reported

    stack.send_event(mention("hello", ts=root["ts"]))

    replies = wait_for(lambda: bot_replies(fake_slack, "C111", root["ts"]), what="the apology")
    assert "Sorry" in replies[0]["text"]
    assert len(fake_llm.requests) == 2
    ended = [r for r in _wire(redis, root["ts"]) if r["type"] == "turn.ended"]
    assert ended[-1]["reason"] == "failed" and "not a chat completion" in ended[-1]["error"]


def _wire(redis, thread_ts: str) -> list[dict]:
    import json

    entries = redis.xrange(f"tl:{{T111:C111:{thread_ts}}}:wire")
    return [json.loads(fields[b"r"]) for _, fields in entries]
