"""Reactions through the delivery job: real Redis, the fake Slack over HTTP."""

from __future__ import annotations

from gateway.delivery.job import Delivery
from gateway.delivery.pacing import reserve_post
from gateway.sandbox.stack import BOT_TOKEN
from gateway.slack_client import web_client
from jobs.keys import SessionKey, pace_key
from jobs.session.notices import ReactionNotice
from jobs.session.store import SessionStore
from jobs.settings import Settings


def test_reactions_do_not_take_the_channels_posting_slots(redis, slack):
    root = slack.add_user_message("C111", "<@UBOT0001> go", user="W222")
    store = SessionStore(redis, SessionKey(team="T111", channel="C111", thread_ts=root["ts"]))
    for _ in range(4):  # the channel's burst is used up: a post now would wait
        reserve_post(redis, "T111", "C111")
    next_slot = redis.get(pace_key("T111", "C111"))
    store.post_notice(ReactionNotice(message_ts=root["ts"], add="eyes"))
    store.post_notice(ReactionNotice(message_ts=root["ts"], remove="eyes", add="white_check_mark"))
    settings = Settings.load(SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_API_URL=slack.api_url)
    Delivery(store, web_client(settings, retry_handlers=[])).run()

    assert [c.method for c in slack.calls() if c.method.startswith("reactions.")] == [
        "reactions.add",
        "reactions.remove",
        "reactions.add",
    ]
    assert redis.get(pace_key("T111", "C111")) == next_slot  # Slack limits reactions apart from posts
