"""Outsiders: another organisation's people (Slack Connect) and guests are refused by default.

Signed events through the real web process and a worker. A refusal is an ephemeral line to the
person and nothing else: no session keys, no turn, no model request. SLACK_ALLOW_EXTERNAL or a
place on SLACK_ALLOWED_USERS (`T…:U…` entries count in that workspace only) lets them in.
"""

from __future__ import annotations

from typing import Any

import pytest
from redis import Redis

from agent.testing import FakeLLM, text
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.stack import Stack
from jobs.control import cancel_requested_by
from tests.e2e.sessions import link, open_session, put_in_state, slash_command
from tests.polling import wait_for
from tests.rq_state import waiting
from tests.slack_events import mention, message
from tests.thread_view import bot_messages, ephemerals

OUTSIDERS_REFUSED = "guests and people from other organisations"  # part of the refusal


def declare(fake_slack: FakeSlack, who: str) -> dict[str, Any]:
    """The person and how their mention arrives: extra event fields when Slack marks them."""
    if who == "external (user_team)":
        return {"user_team": "T999"}
    if who == "shared channel's foreign member":
        fake_slack.add_external_user("W666", team="T999")  # app_mention may not carry user_team
    elif who == "guest":
        fake_slack.add_guest("W666")
    elif who == "single-channel guest":
        fake_slack.add_guest("W666", single_channel=True)
    return {}


def mention_by(stack: Stack, fake_slack: FakeSlack, extra: dict[str, Any], *, team: str = "T111") -> str:
    root = fake_slack.add_user_message("C111", f"<@{BOT_USER_ID}> run the build", user="W666")
    body = mention("run the build", ts=root["ts"], user="W666", team=team)
    body["event"].update(extra)
    assert stack.send_event(body).status_code == 200
    return str(root["ts"])


def nothing_recorded(redis: Redis, fake_llm: FakeLLM) -> bool:
    sessions = redis.keys("tl:{*") + redis.keys("tl:recent:*")
    return not sessions and waiting(redis) == 0 and not fake_llm.requests


WHO = ["external (user_team)", "shared channel's foreign member", "guest", "single-channel guest"]


@pytest.mark.parametrize("who", WHO)
def test_an_outsiders_mention_is_refused_ephemerally_and_records_nothing(
    stack, fake_slack, fake_llm, redis, who
):
    mention_by(stack, fake_slack, declare(fake_slack, who))
    told = ephemerals(fake_slack, "W666")
    assert len(told) == 1 and OUTSIDERS_REFUSED in told[0]["text"]
    assert nothing_recorded(redis, fake_llm)


@pytest.mark.parametrize("who", ["external (user_team)", "guest"])
def test_an_outsiders_dm_is_refused_likewise(stack, fake_slack, fake_llm, redis, who):
    extra = declare(fake_slack, who)
    sent = fake_slack.add_user_message("D666", "run the build", user="W666")
    body = message("run the build", ts=sent["ts"], channel="D666", channel_type="im", user="W666", **extra)
    assert stack.send_event(body).status_code == 200
    assert OUTSIDERS_REFUSED in ephemerals(fake_slack, "W666")[0]["text"]
    assert nothing_recorded(redis, fake_llm)


def test_an_outsiders_reply_in_a_session_thread_is_not_input(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    fake_slack.add_guest("W666")
    fake_llm.script(text("tested"))
    for user, words in (("W666", "also deploy it"), ("W222", "and test it")):
        said = fake_slack.add_user_message("C111", words, user=user, thread_ts=key.thread_ts)
        assert (
            stack.send_event(message(words, ts=said["ts"], thread_ts=key.thread_ts, user=user)).status_code
            == 200
        )
    wait_for(lambda: len(bot_messages(fake_slack, "C111", key.thread_ts)) >= 2, what="the answer to W222")
    sent = str(fake_llm.accepted()[-1]["messages"])
    assert "and test it" in sent and "also deploy it" not in sent


def test_an_outsiders_control_word_is_refused(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    put_in_state(redis, key, "running")
    fake_slack.add_external_user("W666")
    said = fake_slack.add_user_message("C111", "!stop", user="W666", thread_ts=key.thread_ts)
    body = message("!stop", ts=said["ts"], thread_ts=key.thread_ts, user="W666", user_team="T999")
    assert stack.send_event(body).status_code == 200
    assert OUTSIDERS_REFUSED in ephemerals(fake_slack, "W666")[-1]["text"]
    assert cancel_requested_by(redis, key) is None


def test_an_outsiders_slash_command_skill_is_refused(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    fake_slack.add_guest("W555")  # a member of C111 by default, but a guest
    answer = slash_command(stack, fake_slack, f"skill release {link(fake_slack, key)}", user="W555")
    assert OUTSIDERS_REFUSED in answer
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize(
    "settings",
    [{"SLACK_ALLOW_EXTERNAL": "true"}, {"SLACK_ALLOWED_USERS": "W222,W666"}],
    ids=["setting", "listed"],
)
@pytest.mark.parametrize("who", ["external (user_team)", "guest"])
def test_a_setting_or_the_allowlist_lets_outsiders_in(make_stack, fake_slack, fake_llm, settings, who):
    stack = make_stack(**settings)
    fake_llm.script(text("building"))
    ts = mention_by(stack, fake_slack, declare(fake_slack, who))
    wait_for(lambda: bot_messages(fake_slack, "C111", ts), what="the answer")
    assert not ephemerals(fake_slack, "W666")


def test_a_per_team_entry_admits_that_person_in_that_workspace_only(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(SLACK_ALLOWED_USERS="T111:W222")
    key = open_session(stack, fake_slack, fake_llm)  # W222 in T111
    assert bot_messages(fake_slack, "C111", key.thread_ts)

    elsewhere = fake_slack.add_user_message("C111", f"<@{BOT_USER_ID}> hi", user="W222")
    assert stack.send_event(mention("hi", ts=elsewhere["ts"], team="T222")).status_code == 200
    assert ephemerals(fake_slack, "W222")[-1]["text"].startswith("You can't")
    assert not redis.keys("tl:{T222*")
    assert len(fake_llm.requests) == 1


def test_operators_may_be_scoped_to_a_workspace(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(SLACK_OPERATORS="T111:W999, T222:W777")
    key = open_session(stack, fake_slack, fake_llm)
    put_in_state(redis, key, "running")
    assert slash_command(stack, fake_slack, f"cancel {link(fake_slack, key)}", user="W777").startswith("Only")
    assert "Stopping" in slash_command(stack, fake_slack, f"cancel {link(fake_slack, key)}", user="W999")
    assert cancel_requested_by(redis, key) == "W999"
