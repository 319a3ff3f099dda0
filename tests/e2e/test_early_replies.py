"""Replies that reach us before their thread's session exists (issue 17, item 3).

A person mentions the agent and types a follow-up at once; Slack may deliver the follow-up
first. The reply is held until the mention starts the session and is then answered in the
mention's turn, in Slack ts order. Signed request → web → Redis → worker → fake model.
"""

from __future__ import annotations

from agent.testing import FakeLLM, text
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from jobs.keys import SessionKey, meta_key
from tests.polling import wait_for
from tests.slack_events import mention, message, message_changed, message_deleted
from tests.thread_view import thread_texts

RETRY = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}


def answered(fake_slack: FakeSlack, thread_ts: str, count: int) -> list[str]:
    return wait_for(
        lambda: (texts := thread_texts(fake_slack, "C111", thread_ts)) and len(texts) >= count and texts,
        what=f"{count} bot message(s) in the thread",
    )


def user_turns(fake_llm: FakeLLM) -> list[list[str]]:
    """What people said in each model request, one entry per message (the projection sends a run
    of user messages as one, separated by blank lines)."""
    return [
        [said for m in r["messages"] if m["role"] == "user" for said in m["content"].split("\n\n")]
        for r in fake_llm.accepted()
    ]


def mentioned(fake_slack: FakeSlack, ask: str) -> dict:
    return fake_slack.add_user_message("C111", f"<@{BOT_USER_ID}> {ask}", user="W222")


def typed(fake_slack: FakeSlack, root: dict, words: str, user: str = "W222") -> dict:
    return fake_slack.add_user_message("C111", words, user=user, thread_ts=root["ts"])


def reply_event(said: dict, root: dict, user: str = "W222", **options: str) -> dict:
    return message(said["text"], ts=said["ts"], thread_ts=root["ts"], user=user, **options)


def test_a_reply_that_arrives_before_the_mention_is_answered_in_the_mentions_turn(
    stack, fake_slack, fake_llm
):
    root = mentioned(fake_slack, "fix the build")
    follow = typed(fake_slack, root, "it broke on main", user="W333")
    fake_llm.script(text("fixed"))

    assert stack.send_event(reply_event(follow, root, user="W333")).status_code == 200
    assert stack.send_event(mention("fix the build", ts=root["ts"])).status_code == 200

    assert answered(fake_slack, root["ts"], 1) == ["fixed"]
    assert user_turns(fake_llm) == [["<@W222>: fix the build", "<@W333>: it broke on main"]]


def test_early_replies_delivered_out_of_order_reach_the_model_in_ts_order(stack, fake_slack, fake_llm):
    root = mentioned(fake_slack, "deploy")
    first, second = typed(fake_slack, root, "to staging"), typed(fake_slack, root, "then prod")
    fake_llm.script(text("deployed"))

    stack.send_event(reply_event(second, root))
    stack.send_event(reply_event(first, root))
    stack.send_event(mention("deploy", ts=root["ts"]))

    answered(fake_slack, root["ts"], 1)
    assert user_turns(fake_llm) == [["<@W222>: deploy", "<@W222>: to staging", "<@W222>: then prod"]]


def test_a_redelivered_early_reply_is_seen_once_even_after_the_session_starts(stack, fake_slack, fake_llm):
    root = mentioned(fake_slack, "look")
    follow = typed(fake_slack, root, "at the logs")
    delivery = reply_event(follow, root, event_id="EvEarly1")
    fake_llm.script(text("looked"), text("after the barrier"))

    stack.send_event(delivery)
    stack.send_event(delivery, headers=RETRY)
    stack.send_event(mention("look", ts=root["ts"]))
    answered(fake_slack, root["ts"], 1)
    stack.send_event(delivery, headers={**RETRY, "X-Slack-Retry-Num": "2"})
    barrier = typed(fake_slack, root, "barrier")
    stack.send_event(reply_event(barrier, root))

    assert answered(fake_slack, root["ts"], 2) == ["looked", "after the barrier"]
    assert user_turns(fake_llm)[-1] == ["<@W222>: look", "<@W222>: at the logs", "<@W222>: barrier"]
    assert len(fake_llm.accepted()) == 2


def test_a_reply_in_a_thread_never_mentioned_starts_nothing_and_expires(stack, fake_slack, fake_llm, redis):
    chatter = fake_slack.add_user_message("C111", "lunch?", user="W222")
    answer = typed(fake_slack, chatter, "sure")
    elsewhere = mentioned(fake_slack, "hello")
    fake_llm.script(text("hi"))

    stack.send_event(reply_event(answer, chatter))
    stack.send_event(mention("hello", ts=elsewhere["ts"]))

    answered(fake_slack, elsewhere["ts"], 1)
    assert user_turns(fake_llm) == [["<@W222>: hello"]]  # nothing from the other thread
    assert thread_texts(fake_slack, "C111", chatter["ts"]) == []
    held = [k for k in redis.keys(f"tl:{{T111:C111:{chatter['ts']}}}:*")]
    assert not redis.exists(meta_key(SessionKey(team="T111", channel="C111", thread_ts=chatter["ts"])))
    assert len(held) == 1 and 0 < redis.ttl(held[0]) <= 600  # held a while, then gone


def test_the_message_twin_of_a_first_mention_in_a_reply_still_starts_the_session(stack, fake_slack, fake_llm):
    root = fake_slack.add_user_message("C111", "the build is red", user="W333")
    ask = typed(fake_slack, root, f"<@{BOT_USER_ID}> can you look?")
    fake_llm.script(text("looking"))

    stack.send_event(reply_event(ask, root))  # Slack's `message` twin first
    stack.send_event(mention("can you look?", ts=ask["ts"], thread_ts=root["ts"]))

    assert answered(fake_slack, root["ts"], 1) == ["looking"]
    [[context, request]] = user_turns(fake_llm)  # the thread so far, quoted, then the mention
    assert "> the build is red" in context and request == "<@W222>: can you look?"


def test_talk_before_a_mid_thread_mention_is_quoted_context_and_what_follows_is_input(
    stack, fake_slack, fake_llm
):
    root = fake_slack.add_user_message("C111", "the build is red", user="W333")
    before = typed(fake_slack, root, "probably the cache", user="W333")
    ask = typed(fake_slack, root, f"<@{BOT_USER_ID}> can you look?")
    after = typed(fake_slack, root, "the job is 42")
    fake_llm.script(text("looking"))

    stack.send_event(reply_event(before, root, user="W333"))
    stack.send_event(reply_event(after, root))
    stack.send_event(mention("can you look?", ts=ask["ts"], thread_ts=root["ts"]))

    answered(fake_slack, root["ts"], 1)
    [[context, *inputs]] = user_turns(fake_llm)
    assert inputs == ["<@W222>: can you look?", "<@W222>: the job is 42"]
    assert "> the build is red" in context and "> probably the cache" in context
    assert "the job is 42" not in context  # written after the mention: input, not context


def test_an_early_reply_edited_or_deleted_before_the_mention_counts_as_changed(stack, fake_slack, fake_llm):
    root = mentioned(fake_slack, "rename it")
    edited, deleted = typed(fake_slack, root, "to foo"), typed(fake_slack, root, "and bar")
    fake_llm.script(text("renamed"))

    stack.send_event(reply_event(edited, root))
    stack.send_event(reply_event(deleted, root))
    stack.send_event(message_changed("to baz", ts=edited["ts"], old_text="to foo", thread_ts=root["ts"]))
    stack.send_event(message_deleted(ts=deleted["ts"], text="and bar", thread_ts=root["ts"]))
    stack.send_event(mention("rename it", ts=root["ts"]))

    answered(fake_slack, root["ts"], 1)
    assert user_turns(fake_llm) == [["<@W222>: rename it", "<@W222>: to baz"]]
