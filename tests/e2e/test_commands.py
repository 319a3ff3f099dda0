"""`/agent` and the in-thread `!words`: what the person who typed them is told, and what it did."""

from __future__ import annotations

import time

import pytest

from agent.compaction.shape import COMPACTION_SUMMARY_PREFIX
from agent.testing import FakeLLM, text
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import Stack
from jobs.control import cancel_requested_by
from jobs.keys import SessionKey, cancel_key, checkpoint_key
from jobs.session.history import load_fold
from jobs.session.state import state_of
from jobs.session.store import SessionStore
from tests.e2e.sessions import link, open_session, put_in_state, slash_command, turn_ended
from tests.polling import wait_for
from tests.slack_events import message
from tests.thread_view import ephemerals, thread_texts


def run(stack: Stack, fake_slack: FakeSlack, words: str, *, user: str = "W222", name: str = "/agent") -> str:
    started = time.monotonic()
    answer = slash_command(stack, fake_slack, words, user=user, name=name)
    assert time.monotonic() - started < 3.0  # Slack's deadline for the acknowledgement
    return answer


def test_help_lists_every_subcommand(stack, fake_slack):
    answer = run(stack, fake_slack, "help")
    for usage in ("cancel [link]", "resume [link]", "status [link]", "compact <link>", "!stop"):
        assert usage in answer


@pytest.mark.parametrize("words", ["frobnicate", "CANCELLING now"])
def test_an_unknown_subcommand_gets_the_help_text(stack, fake_slack, words):
    answer = run(stack, fake_slack, words)
    assert answer.startswith(f"Unknown subcommand `{words.split()[0].lower()}`.")
    assert "cancel [link]" in answer


def test_cancel_with_a_link_stops_the_running_turn(stack, fake_slack, busy_turns):
    turn = busy_turns.start()
    assert "Stopping the running turn" in run(stack, fake_slack, f"cancel {link(fake_slack, turn.key)}")
    busy_turns.assert_stopped(turn)


def test_cancel_without_a_link_acts_on_the_callers_latest_session_in_the_channel(
    stack, fake_slack, fake_llm, redis
):
    older = open_session(stack, fake_slack, fake_llm)
    latest = open_session(stack, fake_slack, fake_llm)
    elsewhere = open_session(stack, fake_slack, fake_llm, channel="C222")
    for key in (older, latest, elsewhere):
        put_in_state(redis, key, "running")
    assert "Stopping" in run(stack, fake_slack, "cancel")
    assert [cancel_requested_by(redis, k) for k in (older, latest, elsewhere)] == [None, "W222", None]


def test_a_link_to_a_reply_targets_its_thread(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    put_in_state(redis, key, "running")
    reply_link = f"<{link(fake_slack, key)[:-6]}999999?thread_ts={key.thread_ts}&cid={key.channel}>"
    assert "Stopping" in run(stack, fake_slack, f"cancel {reply_link}")
    assert cancel_requested_by(redis, key) == "W222"


def test_someone_else_is_refused_and_nothing_changes(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    put_in_state(redis, key, "running")
    answer = run(stack, fake_slack, f"cancel {link(fake_slack, key)}", user="W333")
    assert answer == "Only <@W222>, who started this session, or an operator can do that."
    assert cancel_requested_by(redis, key) is None
    assert state_of(SessionStore(redis, key)) == "running"


def test_operators_by_id_and_by_user_group_may_act(make_stack, fake_slack, fake_llm, redis):
    fake_slack.state.usergroups["S0OPS"] = ["W777"]
    stack = make_stack(SLACK_OPERATORS="W999, S0OPS")
    key = open_session(stack, fake_slack, fake_llm)
    for user in ("W999", "W777"):
        put_in_state(redis, key, "running")
        redis.delete(cancel_key(key))
        assert "Stopping" in run(stack, fake_slack, f"cancel {link(fake_slack, key)}", user=user)
        assert cancel_requested_by(redis, key) == user
    assert "Only" in run(stack, fake_slack, f"cancel {link(fake_slack, key)}", user="W555")
    assert len(fake_slack.calls("usergroups.users.list")) == 1  # the membership is cached


def test_resume_continues_a_stopped_session_and_the_thread_says_who(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    put_in_state(redis, key, "cancelled")
    assert run(stack, fake_slack, f"resume {link(fake_slack, key)}").startswith("Resumed")
    notice = "Resumed by <@W222>. Nothing that was interrupted is re-run."
    texts = wait_for(
        lambda: (t := thread_texts(fake_slack, key.channel, key.thread_ts)[1:]) and notice in t and t,
        what="the resume notice",
    )
    assert texts[0] == notice and texts.count(notice) == 1  # the resumed turn may answer after it


def test_resume_of_a_finished_session_says_there_is_nothing_to_resume(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    assert "Nothing to resume" in run(stack, fake_slack, f"resume {link(fake_slack, key)}")


def test_status_tells_what_the_session_does(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    put_in_state(redis, key, "running")
    answer = run(stack, fake_slack, f"status {link(fake_slack, key)}", user="W333")
    assert answer.startswith("State: running · started by <@W222>")
    assert run(stack, fake_slack, "status", user="W444").startswith(
        "You have no agent session in this channel"
    )


SUMMARY = "SUMMARY-7f3a: the person said start and was answered."


def compaction_outcome(fake_slack: FakeSlack, key: SessionKey) -> str | None:
    """The thread's one compaction message once "Compacting…" was edited into its outcome."""
    found = [t for t in thread_texts(fake_slack, key.channel, key.thread_ts) if ":compression:" in t]
    assert len(found) <= 1, found
    return found[0] if found and "Compacting" not in found[0] else None


def assert_compacted(stack: Stack, fake_slack: FakeSlack, fake_llm: FakeLLM, redis, key: SessionKey) -> None:
    """The history became one summary: recorded and checkpointed, the thread told, and the next
    turn's request starting from the summary instead of the messages it replaced."""
    store = SessionStore(redis, key)
    told = wait_for(lambda: compaction_outcome(fake_slack, key), what="the compaction's outcome")
    assert told.startswith(":compression: Compacted: ") and "messages → 1 summary" in told
    applied = [r for r in store.read_wire() if r["type"] == "context.apply_compaction"]
    assert len(applied) == 1 and applied[0]["source"] == "manual" and SUMMARY in applied[0]["context_summary"]
    assert redis.exists(checkpoint_key(key))
    assert [m.text() for m in load_fold(store).history] == [applied[0]["context_summary"]]

    fake_llm.script(text("after the summary"))
    say(stack, fake_slack, key, "what next?")
    wait_for(
        lambda: "after the summary" in thread_texts(fake_slack, key.channel, key.thread_ts), what="answer"
    )
    sent = fake_llm.accepted()[-1]["messages"][1:]  # after the system prompt
    assert [m["role"] for m in sent] == ["user", "user"]
    assert sent[0]["content"].startswith(COMPACTION_SUMMARY_PREFIX) and SUMMARY in sent[0]["content"]
    assert sent[1]["content"] == "<@W222>: what next?"
    assert "started" not in str(sent)  # the first answer lives on only in the summary


def test_compact_needs_a_link_and_compacts_the_session(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    assert run(stack, fake_slack, "compact").startswith("Which thread?")
    fake_llm.script(text(SUMMARY))
    assert run(stack, fake_slack, f"compact {link(fake_slack, key)}").startswith("Compacting")
    assert_compacted(stack, fake_slack, fake_llm, redis, key)


def test_a_link_that_is_not_a_thread_link_is_explained(stack, fake_slack):
    assert "is not a link to a Slack thread" in run(stack, fake_slack, "cancel https://example.com/x")


def test_a_thread_without_a_session_is_said_so(stack, fake_slack):
    answer = run(stack, fake_slack, "cancel https://x.slack.com/archives/C111/p1700000000000100")
    assert answer == "There is no agent session in that thread."


def test_the_command_name_comes_from_slack_command(make_stack, fake_slack):
    stack = make_stack(SLACK_COMMAND="/tl")
    assert "`/tl cancel [link]`" in run(stack, fake_slack, "help", name="/tl")


# -- in the thread -------------------------------------------------------------------------


def say(stack: Stack, fake_slack: FakeSlack, key: SessionKey, words: str, user: str = "W222") -> None:
    sent = fake_slack.add_user_message(key.channel, words, user=user, thread_ts=key.thread_ts)
    response = stack.send_event(message(words, ts=sent["ts"], thread_ts=key.thread_ts, user=user))
    assert response.status_code == 200


@pytest.mark.parametrize("word", ["!stop", "!cancel", "!STOP please"])
def test_stop_words_in_the_thread_stop_the_turn_and_answer_ephemerally(
    stack, fake_slack, redis, busy_turns, word
):
    turn = busy_turns.start()
    key = turn.key
    say(stack, fake_slack, key, word)
    told = ephemerals(fake_slack, "W222")
    assert [(e["channel"], e["thread_ts"]) for e in told] == [(key.channel, key.thread_ts)]
    assert told[0]["text"].startswith("Stopping the running turn")
    busy_turns.assert_stopped(turn)
    store = SessionStore(redis, key)
    texts = [r.get("message", {}).get("content", [{}]) for r in store.read_wire()]
    assert all(word not in str(t) for t in texts)  # a control word is not input for the model
    assert redis.llen(store.inbox_key) == 0  # nor waiting for the next turn


def test_in_thread_words_check_who_may_act(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    put_in_state(redis, key, "running")
    say(stack, fake_slack, key, "!stop", user="W333")
    assert ephemerals(fake_slack, "W333")[0]["text"].startswith("Only <@W222>")
    assert cancel_requested_by(redis, key) is None


def test_status_resume_and_compact_in_the_thread(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    say(stack, fake_slack, key, "!status", user="W333")
    assert ephemerals(fake_slack, "W333")[-1]["text"].startswith("State: idle")
    put_in_state(redis, key, "cancelled")
    say(stack, fake_slack, key, "!resume")
    assert ephemerals(fake_slack, "W222")[-1]["text"].startswith("Resumed")
    # Asked the model and let go of the lease: a turn writes idle before it lets go, and a compaction
    # queued before that finds the session busy (and the model's next reply must be the summary's).
    resumed = lambda: len(fake_llm.requests) == 2 and turn_ended(redis, key)  # noqa: E731
    wait_for(resumed, what="the resumed turn to end")
    fake_llm.script(text(SUMMARY))
    say(stack, fake_slack, key, "!compact")
    assert ephemerals(fake_slack, "W222")[-1]["text"].startswith("Compacting")
    assert_compacted(stack, fake_slack, fake_llm, redis, key)
