from __future__ import annotations

from gateway.authz import OUTSIDER, UNCHECKED, Authz
from gateway.sandbox.fake_slack import Fault
from gateway.slack_client import web_client
from jobs.control import submit_input
from jobs.keys import SessionKey
from jobs.session.user_input import UserInput
from jobs.settings import Settings, listed

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
    assert open_all.may_start("T111", "C9", "U9")
    narrow = authz(
        redis, fake_slack, SLACK_ALLOWED_CHANNELS="C1", SLACK_ALLOWED_USERS="U1", SLACK_ALLOWED_BOTS="B1"
    )
    asked = [("C1", "U1"), ("C2", "U1"), ("C1", "U2"), ("C1", "B1")]
    assert [narrow.may_start("T111", c, u) for c, u in asked] == [
        True,
        False,
        False,
        True,
    ]


def test_a_per_team_entry_counts_in_that_workspace_only():
    ids = frozenset({"T111:W1", "W2", "T222:S9"})
    assert [listed(ids, team, user) for team, user in [("T111", "W1"), ("T222", "W1"), ("T333", "W2")]] == [
        True,
        False,
        True,
    ]


def test_per_team_user_groups_are_asked_in_their_workspace_only(redis, fake_slack):
    fake_slack.state.usergroups["S1"] = ["W7"]
    check = authz(redis, fake_slack, SLACK_OPERATORS="T111:S1")
    assert check.is_operator("T111", "W7") and not check.is_operator("T222", "W7")
    assert len(fake_slack.calls("usergroups.users.list")) == 1


def test_outsiders_are_told_apart_once_and_cached(redis, fake_slack):
    fake_slack.add_guest("W5")
    fake_slack.add_external_user("W6")
    check = authz(redis, fake_slack)
    for _ in range(2):
        refusals = [check.outsider_refusal("T111", user) for user in ("W1", "W5", "W6")]
        assert refusals == [None, OUTSIDER, OUTSIDER]
    assert check.outsider_refusal("T111", "W1", user_team="T999") == OUTSIDER
    assert len(fake_slack.calls("users.info")) == 3


def test_when_slack_cannot_say_who_someone_is_they_are_refused_and_asked_again(redis, fake_slack):
    fake_slack.inject(Fault("users.info", error="fatal_error"))
    check = authz(redis, fake_slack)
    assert check.outsider_refusal("T111", "W1") == UNCHECKED
    assert check.outsider_refusal("T111", "W1") is None


def test_the_setting_or_the_allowlist_lets_outsiders_in(redis, fake_slack):
    fake_slack.add_guest("W5")
    assert authz(redis, fake_slack, SLACK_ALLOW_EXTERNAL=True).outsider_refusal("T111", "W5") is None
    listed_here = authz(redis, fake_slack, SLACK_ALLOWED_USERS="T111:W5")
    assert listed_here.outsider_refusal("T111", "W5") is None
    assert listed_here.outsider_refusal("T111", "W6", user_team="T999") == OUTSIDER


def test_channel_members_are_read_once_for_every_process_and_not_when_slack_fails(redis, fake_slack):
    fake_slack.set_members("C5", ["W1"])
    first, second = authz(redis, fake_slack), authz(redis, fake_slack)
    assert first.in_channel("T111", "C5", "W1") and not second.in_channel("T111", "C5", "W2")
    assert len(fake_slack.calls("conversations.members")) == 1
    fake_slack.inject(Fault("conversations.members", error="channel_not_found"))
    assert first.in_channel("T111", "C6", "W222") is False  # refused, and asked again next time
    assert first.in_channel("T111", "C6", "W222") is True
