"""Test setup for sessions: a real session started through Slack, then put in a given state.

Until the agent loop lands, a "running" or "waiting for approval" session is made by writing
the state (and any parked approval or notice) the loop would write, through jobs' own API.
"""

from __future__ import annotations

from redis import Redis

from agent.testing import FakeLLM, text
from gateway.links import thread_link
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.stack import Stack
from jobs.keys import SessionKey
from jobs.queues import schedule_delivery
from jobs.session.notices import Notice
from jobs.session.state import State, set_state
from jobs.session.store import SessionStore
from tests.polling import wait_for
from tests.slack_events import command, mention
from tests.thread_view import bot_messages


def open_session(
    stack: Stack, fake_slack: FakeSlack, fake_llm: FakeLLM, *, owner: str = "W222", channel: str = "C111"
) -> SessionKey:
    """A session started by `owner`'s mention and answered once."""
    root = fake_slack.add_user_message(channel, f"<@{BOT_USER_ID}> start", user=owner)
    fake_llm.script(text("started"))
    assert stack.send_event(mention("start", ts=root["ts"], user=owner, channel=channel)).status_code == 200
    wait_for(lambda: bot_messages(fake_slack, channel, root["ts"]), what="the first answer")
    key = SessionKey(team="T111", channel=channel, thread_ts=root["ts"])
    store = SessionStore(redis_of(stack), key)
    wait_for(lambda: store.meta.read().state == "idle", what="the first turn to end")
    return key


def redis_of(stack: Stack) -> Redis:
    return Redis.from_url(stack.env["REDIS_URL"])


def put_in_state(redis: Redis, key: SessionKey, state: State) -> None:
    set_state(SessionStore(redis, key), state)


def post(redis: Redis, key: SessionKey, notice: Notice) -> str:
    """Queue a notice as a turn does, and the delivery that posts it."""
    notice_id = SessionStore(redis, key).post_notice(notice)
    schedule_delivery(redis, key)
    return notice_id


def link(fake_slack: FakeSlack, key: SessionKey) -> str:
    return thread_link(fake_slack.url, key.channel, key.thread_ts)


def response_url(fake_slack: FakeSlack, name: str = "1") -> str:
    return f"{fake_slack.url}/response/{name}"


def slash_command(
    stack: Stack, fake_slack: FakeSlack, words: str, *, user: str = "W222", name: str = "/agent"
) -> str:
    """Send `/agent <words>` to web as Slack does; returns the ephemeral answer's text."""
    response = stack.send_command(command(words, user=user, response_url=response_url(fake_slack), name=name))
    assert response.status_code == 200
    return str(response.json()["text"])
