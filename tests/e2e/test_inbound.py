"""Inbound: mentions, follow-ups, DMs, bots, subtypes, dedupe, workspaces, allowlists.

Every test goes signed request → web → Redis → worker → fake Slack and looks at the thread.
"""

from __future__ import annotations

import pytest

from agent.fold import fold
from agent.testing import FakeLLM, text
from gateway.sandbox.fake_slack import BOT_ID, BOT_USER_ID, FakeSlack
from gateway.sandbox.stack import Stack
from jobs.keys import SessionKey
from jobs.session.store import SessionStore
from tests.polling import wait_for
from tests.rq_state import waiting
from tests.slack_events import mention, message, sample_event
from tests.thread_view import bot_messages, ephemerals, thread_texts


def user_texts(redis, key: SessionKey) -> list[str]:
    return [m.text() for m in fold(SessionStore(redis, key).read_wire()) if m.role == "user"]


def answered(fake_slack: FakeSlack, channel: str, thread_ts: str, count: int) -> list[str]:
    return wait_for(
        lambda: (texts := thread_texts(fake_slack, channel, thread_ts)) and len(texts) >= count and texts,
        what=f"{count} bot message(s) in the thread",
    )


def start_session(stack: Stack, fake_slack: FakeSlack, fake_llm: FakeLLM, ask: str = "hello") -> dict:
    root = fake_slack.add_user_message("C111", f"<@{BOT_USER_ID}> {ask}", user="W222")
    fake_llm.script(text("first answer"))
    assert stack.send_event(mention(ask, ts=root["ts"])).status_code == 200
    answered(fake_slack, "C111", root["ts"], 1)
    return root


def reply(fake_slack: FakeSlack, root: dict, words: str, user: str = "W222") -> dict:
    return fake_slack.add_user_message("C111", words, user=user, thread_ts=root["ts"])


def test_a_second_mention_continues_the_threads_session(stack, fake_slack, fake_llm, redis):
    root = start_session(stack, fake_slack, fake_llm)
    again = reply(fake_slack, root, f"<@{BOT_USER_ID}> and more")
    fake_llm.script(text("second answer"))
    stack.send_event(mention("and more", ts=again["ts"], thread_ts=root["ts"]))

    assert answered(fake_slack, "C111", root["ts"], 2) == ["first answer", "second answer"]
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    assert user_texts(redis, key) == ["<@W222>: hello", "<@W222>: and more"]


def test_a_reply_without_mention_in_a_session_thread_is_a_follow_up(stack, fake_slack, fake_llm, redis):
    root = start_session(stack, fake_slack, fake_llm)
    follow = reply(fake_slack, root, "also check the README", user="W333")
    fake_llm.script(text("checked"))
    assert (
        stack.send_event(
            message(follow["text"], ts=follow["ts"], thread_ts=root["ts"], user="W333")
        ).status_code
        == 200
    )

    assert answered(fake_slack, "C111", root["ts"], 2)[-1] == "checked"
    sent = fake_llm.accepted()[-1]["messages"]
    assert sent[-1] == {"role": "user", "content": "<@W333>: also check the README"}


def test_replies_in_threads_without_a_session_and_top_level_chatter_are_ignored(stack, fake_slack, redis):
    plain = fake_slack.add_user_message("C111", "lunch?", user="W222")
    answer = reply(fake_slack, plain, "sure")
    assert stack.send_event(message("lunch?", ts=plain["ts"])).status_code == 200
    assert stack.send_event(message("sure", ts=answer["ts"], thread_ts=plain["ts"])).status_code == 200
    held = SessionKey(team="T111", channel="C111", thread_ts=plain["ts"]).redis_key("early")
    assert redis.keys("tl:{*") == [held.encode()]  # the reply waits for a mention (test_early_replies)
    assert waiting(redis) == 0


def test_a_reply_addressed_to_another_person_is_not_for_the_agent(stack, fake_slack, fake_llm, redis):
    root = start_session(stack, fake_slack, fake_llm)
    aside = reply(fake_slack, root, "<@W333> can you look at this?")
    follow = reply(fake_slack, root, "go on")
    fake_llm.script(text("going on"))
    stack.send_event(message(aside["text"], ts=aside["ts"], thread_ts=root["ts"]))
    stack.send_event(message(follow["text"], ts=follow["ts"], thread_ts=root["ts"]))

    answered(fake_slack, "C111", root["ts"], 2)
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    assert user_texts(redis, key) == ["<@W222>: hello", "<@W222>: go on"]


def test_dms_work_like_mentions_with_one_session_per_dm_thread(stack, fake_slack, fake_llm, redis):
    first = fake_slack.add_user_message("D111", "what is rq?", user="W222")
    fake_llm.script(text("a job queue"), text("yes, on Redis"), text("a different chat"))
    stack.send_event(message(first["text"], ts=first["ts"], channel="D111", channel_type="im"))
    assert answered(fake_slack, "D111", first["ts"], 1) == ["a job queue"]

    follow = fake_slack.add_user_message("D111", "on redis?", user="W222", thread_ts=first["ts"])
    stack.send_event(
        message("on redis?", ts=follow["ts"], thread_ts=first["ts"], channel="D111", channel_type="im")
    )
    assert answered(fake_slack, "D111", first["ts"], 2)[-1] == "yes, on Redis"

    other = fake_slack.add_user_message("D111", "new topic", user="W222")
    stack.send_event(message("new topic", ts=other["ts"], channel="D111", channel_type="im"))
    assert answered(fake_slack, "D111", other["ts"], 1) == ["a different chat"]
    assert user_texts(redis, SessionKey(team="T111", channel="D111", thread_ts=other["ts"])) == [
        "<@W222>: new topic"
    ]


def _bot_reply(root: dict, ts: str, bot_id: str, subtype: str | None = None) -> dict:
    body = message("status report from a bot", ts=ts, thread_ts=root["ts"], user="UB111")
    body["event"]["bot_id"] = bot_id
    if subtype:
        body["event"]["subtype"] = subtype
        body["event"].pop("user")
    return body


def _barrier(stack: Stack, fake_slack: FakeSlack, fake_llm: FakeLLM, root: dict, count: int) -> list[str]:
    """A follow-up whose answer proves everything sent before it was handled (turns run in order)."""
    last = reply(fake_slack, root, "barrier")
    fake_llm.script(text("after the barrier"))
    stack.send_event(message("barrier", ts=last["ts"], thread_ts=root["ts"]))
    return answered(fake_slack, "C111", root["ts"], count)


def test_other_bots_and_the_agent_itself_are_ignored(stack, fake_slack, fake_llm, redis):
    root = start_session(stack, fake_slack, fake_llm)
    for index, (bot_id, subtype) in enumerate([("B999", None), ("B888", "bot_message"), (BOT_ID, None)]):
        stack.send_event(_bot_reply(root, f"{root['ts'][:-1]}{index + 5}", bot_id, subtype))
    own = sample_event("message_subtype_bot_message_self_via_response_url")
    own["event"].update(bot_id=BOT_ID, thread_ts=root["ts"])
    stack.send_event(own)

    assert _barrier(stack, fake_slack, fake_llm, root, 2) == ["first answer", "after the barrier"]
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    assert user_texts(redis, key) == ["<@W222>: hello", "<@W222>: barrier"]


def test_an_allowed_bot_may_steer_a_session(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(SLACK_ALLOWED_BOTS="B999")
    root = start_session(stack, fake_slack, fake_llm)
    fake_llm.script(text("noted, bot"))
    stack.send_event(_bot_reply(root, fake_slack.next_ts(), "B999"))
    assert answered(fake_slack, "C111", root["ts"], 2)[-1] == "noted, bot"
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    assert user_texts(redis, key)[-1] == "<@B999>: status report from a bot"


@pytest.mark.parametrize("subtype", ["channel_join", "channel_topic", "me_message", "huddle_thread"])
def test_subtypes_not_handled_on_purpose_are_ignored(stack, fake_slack, fake_llm, redis, subtype):
    root = start_session(stack, fake_slack, fake_llm)
    stack.send_event(
        message("<@W222> has joined", ts=fake_slack.next_ts(), thread_ts=root["ts"], subtype=subtype)
    )
    assert _barrier(stack, fake_slack, fake_llm, root, 2)[-1] == "after the barrier"
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    assert user_texts(redis, key) == ["<@W222>: hello", "<@W222>: barrier"]


def test_thread_broadcasts_and_file_shares_are_follow_ups(stack, fake_slack, fake_llm, redis):
    root = start_session(stack, fake_slack, fake_llm)
    fake_llm.script(text("seen both"))
    broadcast = message(
        "also to the channel", ts=fake_slack.next_ts(), thread_ts=root["ts"], subtype="thread_broadcast"
    )
    shared = message("the log", ts=fake_slack.next_ts(), thread_ts=root["ts"], subtype="file_share")
    shared["event"]["files"] = sample_event("message_file_share")["event"]["files"]
    stack.send_event(broadcast)
    stack.send_event(shared)

    answered(fake_slack, "C111", root["ts"], 2)
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    assert user_texts(redis, key)[1:] == [
        "<@W222>: also to the channel",
        "<@W222>: the log\n(attached: file.png)",
        # The sample's url_private is on files.slack.com, which a fake SLACK_API_URL never trusts.
        "Files shared with <@W222>'s message:\n"
        "- file.png: not taken, its address is not on Slack (files.slack.com); it was not fetched.",
    ]


def test_a_retry_storm_and_the_message_twin_make_one_input_and_one_turn(stack, fake_slack, fake_llm, redis):
    root = start_session(stack, fake_slack, fake_llm)
    again = reply(fake_slack, root, f"<@{BOT_USER_ID}> run the tests")
    fake_llm.script(text("tests pass"))
    delivery = mention("run the tests", ts=again["ts"], thread_ts=root["ts"], event_id="EvStorm1")
    twin = message(again["text"], ts=again["ts"], thread_ts=root["ts"], event_id="EvStorm2")

    statuses = [stack.send_event(delivery).status_code]
    statuses.append(stack.send_event(twin).status_code)
    for attempt in (1, 2, 3):
        headers = {"X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": "http_timeout"}
        statuses.append(stack.send_event(delivery, headers=headers).status_code)
    assert statuses == [200] * 5

    assert answered(fake_slack, "C111", root["ts"], 2)[-1] == "tests pass"
    texts = _barrier(stack, fake_slack, fake_llm, root, 3)
    assert texts == ["first answer", "tests pass", "after the barrier"]
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    assert user_texts(redis, key) == ["<@W222>: hello", "<@W222>: run the tests", "<@W222>: barrier"]
    assert len(fake_llm.accepted()) == 3  # one turn per input, none for the duplicates


def test_the_twin_arriving_first_still_makes_one_input(stack, fake_slack, fake_llm, redis):
    root = start_session(stack, fake_slack, fake_llm)
    again = reply(fake_slack, root, f"<@{BOT_USER_ID}> twin first")
    fake_llm.script(text("once"))
    stack.send_event(message(again["text"], ts=again["ts"], thread_ts=root["ts"]))
    stack.send_event(mention("twin first", ts=again["ts"], thread_ts=root["ts"]))

    answered(fake_slack, "C111", root["ts"], 2)
    assert _barrier(stack, fake_slack, fake_llm, root, 3)[1] == "once"
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    assert user_texts(redis, key).count("<@W222>: twin first") == 1


def test_the_same_channel_and_ts_in_two_workspaces_are_two_sessions(stack, fake_slack, fake_llm, redis):
    fake_slack.add_org_member("W222", ["T111", "T222"])  # an org-wide install: W222 is in both
    root = fake_slack.add_user_message("C111", "<@UBOT0001> hi", user="W222")
    fake_llm.script(text("hello team one"), text("hello team two"))
    stack.send_event(mention("from team one", ts=root["ts"], team="T111"))
    answered(fake_slack, "C111", root["ts"], 1)
    stack.send_event(mention("from team two", ts=root["ts"], team="T222"))
    answered(fake_slack, "C111", root["ts"], 2)

    one = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    two = SessionKey(team="T222", channel="C111", thread_ts=root["ts"])
    assert user_texts(redis, one) == ["<@W222>: from team one"]
    assert user_texts(redis, two) == ["<@W222>: from team two"]
    assert [len(r["messages"]) for r in fake_llm.accepted()] == [2, 2]  # system + one user: nothing shared


def test_the_channel_allowlist_refuses_a_mention_elsewhere_ephemerally(
    make_stack, fake_slack, fake_llm, redis
):
    stack = make_stack(SLACK_ALLOWED_CHANNELS="C111")
    root = fake_slack.add_user_message("C999", "<@UBOT0001> hi", user="W222")
    assert stack.send_event(mention("hi", ts=root["ts"], channel="C999")).status_code == 200

    refusals = ephemerals(fake_slack, "W222")
    assert [(e["channel"], e["thread_ts"]) for e in refusals] == [("C999", root["ts"])]
    assert "allowlist" in refusals[0]["text"]
    assert redis.keys("tl:{T111:C999:*") == []
    assert bot_messages(fake_slack, "C999", root["ts"]) == []


def test_the_user_allowlist_lets_listed_people_start_and_refuses_others(
    make_stack, fake_slack, fake_llm, redis
):
    stack = make_stack(SLACK_ALLOWED_USERS="W222")
    stranger = fake_slack.add_user_message("C111", "<@UBOT0001> hi", user="W333")
    stack.send_event(mention("hi", ts=stranger["ts"], user="W333"))
    assert "allowlist" in ephemerals(fake_slack, "W333")[0]["text"]
    assert redis.keys(f"tl:{{T111:C111:{stranger['ts']}}}:*") == []

    root = start_session(stack, fake_slack, fake_llm)
    assert thread_texts(fake_slack, "C111", root["ts"]) == ["first answer"]
