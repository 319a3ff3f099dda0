from __future__ import annotations

from gateway.authz import Authz
from gateway.slack_client import web_client
from jobs.control import submit_input
from jobs.keys import SessionKey
from jobs.session.user_input import UserInput
from jobs.settings import Settings

KEY = SessionKey(team="T111", channel="C1", thread_ts="1700000000.000100")


def authz(redis, fake_slack, **settings) -> Authz:
    config = Settings(SLACK_BOT_TOKEN="xoxb-sandbox-token", SLACK_API_URL=fake_slack.api_url, **settings)
    return Authz(config, redis, web_client(config))


def test_the_initiator_and_operators_may_act_and_nobody_else(redis, fake_slack):
    fake_slack.state.usergroups["S1"] = ["U_GROUP"]
    check = authz(redis, fake_slack, SLACK_OPERATORS="U_OP,S1")
    for user, ts in (("U_OWNER", KEY.thread_ts), ("U_LATER", "1700000001.000100")):
        # a later participant does not become the owner
        submit_input(redis, KEY, UserInput(text="hi", user=user, ts=ts), turn_timeout_s=60)
    assert [check.may_act(KEY, u) for u in ("U_OWNER", "U_OP", "U_GROUP", "U_LATER")] == [
        True,
        True,
        True,
        False,
    ]


def test_group_members_are_cached_for_every_process(redis, fake_slack):
    fake_slack.state.usergroups["S1"] = ["U1"]
    first, second = (
        authz(redis, fake_slack, SLACK_OPERATORS="S1"),
        authz(redis, fake_slack, SLACK_OPERATORS="S1"),
    )
    assert first.is_operator("T111", "U1") and second.is_operator("T111", "U1")
    assert len(fake_slack.calls("usergroups.users.list")) == 1


def test_an_unknown_group_grants_nothing_and_is_asked_again_later(redis, fake_slack):
    check = authz(redis, fake_slack, SLACK_OPERATORS="S404")
    assert check.is_operator("T111", "U1") is False
    assert check.is_operator("T111", "U1") is False
    assert len(fake_slack.calls("usergroups.users.list")) == 2


def test_allowlists_gate_who_may_start_and_where(redis, fake_slack):
    open_all = authz(redis, fake_slack)
    assert open_all.may_start("C9", "U9")
    narrow = authz(
        redis, fake_slack, SLACK_ALLOWED_CHANNELS="C1", SLACK_ALLOWED_USERS="U1", SLACK_ALLOWED_BOTS="B1"
    )
    assert [narrow.may_start(c, u) for c, u in [("C1", "U1"), ("C2", "U1"), ("C1", "U2"), ("C1", "B1")]] == [
        True,
        False,
        False,
        True,
    ]
