"""Edits and deletes of a message still waiting in the inbox (sent while a turn runs)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from agent.testing import FakeLLM, Reply, text
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.stack import Stack
from jobs.keys import SessionKey
from jobs.session.inbox import waiting
from jobs.session.store import SessionStore
from tests.polling import wait_for
from tests.slack_events import mention, message, message_changed, message_deleted
from tests.thread_view import ephemerals, thread_texts


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    held = threading.Event()
    yield held
    held.set()  # never leave a model answer hanging past the test


def busy_session(stack: Stack, fake_slack: FakeSlack, fake_llm: FakeLLM, gate: threading.Event) -> SessionKey:
    """A session whose first turn is running: the model holds its answer until `gate` is set."""
    root = fake_slack.add_user_message("C111", f"<@{BOT_USER_ID}> refactor the server", user="W222")
    fake_llm.script(Reply(text="refactored", gate=gate))
    stack.send_event(mention("refactor the server", ts=root["ts"]))
    wait_for(lambda: fake_llm.requests, what="the turn's model call")
    return SessionKey(team="T111", channel="C111", thread_ts=root["ts"])


def follow_up(stack: Stack, fake_slack: FakeSlack, key: SessionKey, words: str) -> str:
    sent = fake_slack.add_user_message("C111", words, user="W222", thread_ts=key.thread_ts)
    stack.send_event(message(words, ts=sent["ts"], thread_ts=key.thread_ts))
    wait_for(lambda: "→ inbox" in stack.log("web"), what="the follow-up waiting in the inbox")
    return sent["ts"]


def test_editing_a_waiting_message_changes_what_the_agent_reads(
    make_stack, fake_slack, fake_llm, gate, redis
):
    stack = make_stack(workers=2)
    fake_slack.add_person("W333", display_name="Dana")
    key = busy_session(stack, fake_slack, fake_llm, gate)
    ts = follow_up(stack, fake_slack, key, "use port 8080")
    fake_llm.script(text("switched to 9090"))
    edited = "use port 9090 as <@W333> said"
    stack.send_event(message_changed(edited, ts=ts, old_text="use port 8080", thread_ts=key.thread_ts))

    note = "<@W222> edited a message before the agent read it; the agent will read the new version."
    wait_for(lambda: note in thread_texts(fake_slack, "C111", key.thread_ts), what="the edit notice")
    assert [i.text for i in waiting(SessionStore(redis, key))] == ["use port 9090 as @Dana (W333) said"]
    gate.set()
    wait_for(lambda: "switched to 9090" in thread_texts(fake_slack, "C111", key.thread_ts), what="the answer")
    last_request = fake_llm.accepted()[-1]["messages"]
    assert last_request[-1] == {"role": "user", "content": "<@W222>: use port 9090 as @Dana (W333) said"}
    assert "8080" not in str([r["messages"] for r in fake_llm.accepted()])


def test_deleting_a_waiting_message_withdraws_it(make_stack, fake_slack, fake_llm, gate, redis):
    stack = make_stack(workers=2)
    key = busy_session(stack, fake_slack, fake_llm, gate)
    ts = follow_up(stack, fake_slack, key, "also delete the database")
    stack.send_event(message_deleted(ts=ts, text="also delete the database", thread_ts=key.thread_ts))

    note = "<@W222> deleted a message before the agent read it; it was withdrawn."
    wait_for(lambda: note in thread_texts(fake_slack, "C111", key.thread_ts), what="the withdrawal notice")
    assert waiting(SessionStore(redis, key)) == []
    gate.set()
    wait_for(lambda: "refactored" in thread_texts(fake_slack, "C111", key.thread_ts), what="the answer")

    fake_llm.script(text("nothing was deleted"))
    last = fake_slack.add_user_message("C111", "what did I ask?", user="W222", thread_ts=key.thread_ts)
    stack.send_event(message("what did I ask?", ts=last["ts"], thread_ts=key.thread_ts))
    wait_for(
        lambda: "nothing was deleted" in thread_texts(fake_slack, "C111", key.thread_ts), what="a barrier"
    )
    users = [m["content"] for m in fake_llm.accepted()[-1]["messages"] if m["role"] == "user"]
    assert users == ["<@W222>: refactor the server", "<@W222>: what did I ask?"]
    assert len(fake_llm.accepted()) == 2  # no turn was started for the withdrawn message


def test_editing_or_deleting_a_message_already_read_tells_its_author_only(stack, fake_slack, fake_llm):
    root = fake_slack.add_user_message("C111", f"<@{BOT_USER_ID}> hi", user="W222")
    fake_llm.script(text("hello"))
    stack.send_event(mention("hi", ts=root["ts"]))
    wait_for(lambda: thread_texts(fake_slack, "C111", root["ts"]), what="the answer")

    edit = message_changed(
        f"<@{BOT_USER_ID}> bye", ts=root["ts"], old_text=root["text"], thread_ts=root["ts"]
    )
    assert stack.send_event(edit).status_code == 200
    assert ephemerals(fake_slack, "W222")[-1]["text"].startswith("The agent had already read that message")
    stack.send_event(message_deleted(ts=root["ts"], text=root["text"], thread_ts=root["ts"]))
    assert ephemerals(fake_slack, "W222")[-1]["text"].startswith("The agent had already read that message;")
    assert thread_texts(fake_slack, "C111", root["ts"]) == ["hello"]
