"""Streaming a step into the thread: Delivery against a real Redis and the fake Slack over HTTP.

The turn's side is played by publishing `LiveStep` records as a turn would (jobs.session.live);
each `deliver()` is one delivery run, as the `slack` queue would start it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from redis import Redis

from gateway.delivery.job import Delivery
from gateway.delivery.streams import STREAM_CHARS, answered_turn_note
from gateway.render.mentions import BREAK
from gateway.sandbox.fake_slack import FakeSlack, Fault
from gateway.sandbox.stack import BOT_TOKEN
from gateway.slack_client import web_client
from jobs.keys import SessionKey, meta_key, slack_pause_key
from jobs.session import live
from jobs.session.live import LiveStep, LiveTask
from jobs.session.notices import AnswerNotice, ProgressNotice, TurnCard
from jobs.session.state import set_state
from jobs.session.store import SessionStore
from jobs.settings import Settings
from tests.polling import wait_for
from tests.thread_view import bot_messages, shown

TURN = "job1.abc123"
ANSWER = "Here is **the answer**, written in several pieces as the model streamed it."


@pytest.fixture
def store(redis, slack: FakeSlack) -> SessionStore:
    root = slack.add_user_message("C111", "<@UBOT0001> explain", user="W222")
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    store = SessionStore(redis, key)
    redis.hset(meta_key(key), "owner", "W222")
    set_state(store, "running", turn_id=TURN, job="job1")
    return store


def deliver(store: SessionStore, slack: FakeSlack, *, streaming: bool = True, timeout: int = 5) -> int:
    settings = Settings.load(
        SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_API_URL=slack.api_url, SLACK_TIMEOUT_SECONDS=timeout
    )
    return Delivery(store, web_client(settings, retry_handlers=[]), streaming=streaming).run()


def publish(store: SessionStore, text: str, step: int = 1, **fields: object) -> LiveStep:
    record = LiveStep(turn_id=TURN, step=step, text=text, **fields)  # type: ignore[arg-type]
    live.publish(store, record)
    return record


def allow_next_append(store: SessionStore) -> None:
    """The deliverer appends at most once a second; a test moves its clock instead of sleeping."""
    notes = store.redis.hgetall(store.key.redis_key("ledger_notes"))
    for name in notes:
        if name.endswith(b":at"):
            store.redis.hset(store.key.redis_key("ledger_notes"), name, "0")


def thread(slack: FakeSlack, store: SessionStore) -> list[dict]:
    return bot_messages(slack, store.key.channel, store.key.thread_ts)


def test_a_step_streams_in_several_appends_and_its_answer_is_not_posted_again(store, slack):
    publish(store, ANSWER[:20])
    deliver(store, slack)
    [message] = thread(slack, store)
    assert message["streaming"] and message["text"] == ANSWER[:20]
    publish(store, ANSWER[:45])
    allow_next_append(store)
    deliver(store, slack)
    publish(store, ANSWER, done=True, final=True)
    store.post_notice(AnswerNotice(turn_id=TURN, text=ANSWER, step=1))
    allow_next_append(store)
    deliver(store, slack)

    [message] = thread(slack, store)
    assert message["text"] == ANSWER and not message["streaming"]
    assert [b["type"] for b in message["blocks"]] == ["markdown", "context_actions"]
    assert message["blocks"][1]["elements"][0]["type"] == "feedback_buttons"
    pieces = [
        c.args.get("chunks") for c in slack.calls() if c.method in ("chat.appendStream", "chat.stopStream")
    ]
    assert (
        pieces
        == [  # the last piece rides on the stop: one call less
            [{"type": "markdown_text", "text": ANSWER[20:45]}],
            [{"type": "markdown_text", "text": ANSWER[45:]}],
        ]
    )
    assert slack.calls("chat.startStream")[0].args["recipient_user_id"] == "W222"
    assert not slack.calls("chat.postMessage")  # the streamed answer is the answer
    assert live.read(store, TURN, 1) is None  # forgotten once complete


def test_tool_calls_show_as_tasks_and_the_next_notice_waits_for_the_stream(store, slack):
    task = LiveTask(id="c1", title="shell", details="ls -la")
    publish(store, "Let me look.", tasks=[task])
    store.post_notice(AnswerNotice(turn_id=TURN, text="after the step", step=2))
    deliver(store, slack)
    assert [shown(m) for m in thread(slack, store)] == ["Let me look."]  # the answer waits its turn
    publish(store, "Let me look.", tasks=[task.model_copy(update={"status": "complete"})], done=True)
    allow_next_append(store)
    deliver(store, slack)

    first, answer = thread(slack, store)
    assert first["tasks"] == [{"id": "c1", "title": "shell", "status": "complete", "details": "ls -la"}]
    assert not first["streaming"] and "blocks" not in first  # only an answer carries feedback buttons
    assert shown(answer) == "after the step"


def test_a_lost_append_answer_ends_in_one_complete_message(store, slack):
    publish(store, ANSWER[:20])
    deliver(store, slack)
    slack.inject(Fault("chat.appendStream", after_work=True, delay_s=2))  # Slack took it; the answer is lost
    publish(store, ANSWER[:45])
    allow_next_append(store)
    with pytest.raises(TimeoutError):  # the delivery run fails; RQ and the watchdog run it again
        deliver(store, slack, timeout=1)
    publish(store, ANSWER, done=True, final=True)
    deliver(store, slack)
    deliver(store, slack)  # a run after the end changes nothing

    [message] = thread(slack, store)
    assert shown(message).startswith(ANSWER) and shown(message).count("the answer") == 1
    assert not message["streaming"]


def test_a_stream_slack_closed_is_completed_by_an_edit(store, slack):
    publish(store, ANSWER[:20])
    deliver(store, slack)
    assert slack.close_streams() == 1  # idle too long
    publish(store, ANSWER, done=True, final=True)
    allow_next_append(store)
    deliver(store, slack)

    [message] = thread(slack, store)
    assert shown(message).startswith(ANSWER) and message.get("edited") == 1


def test_a_step_asked_again_cuts_the_first_stream_off_and_streams_anew(store, slack):
    publish(store, "First try that")
    deliver(store, slack)
    publish(store, "Second try, whole.", attempt=1, done=True, final=True)
    deliver(store, slack)

    first, second = thread(slack, store)
    assert "cut off" in first["text"] and not first["streaming"]
    assert second["text"] == "Second try, whole."


def test_text_past_what_a_stream_shows_follows_as_messages(store, slack):
    long = "word " * (STREAM_CHARS // 5 + 400)
    publish(store, long, done=True, final=True)
    deliver(store, slack)

    stream, *rest = thread(slack, store)
    assert len(stream["text"]) == STREAM_CHARS and rest
    assert (stream["text"] + " ".join(shown(m) for m in rest)).split() == long.split()


def test_streaming_refused_falls_back_to_one_post(store, slack):
    slack.refuse_streaming("C111")
    publish(store, "Checking.", tasks=[LiveTask(id="c1", title="shell", status="complete")], done=True)
    store.post_notice(AnswerNotice(turn_id=TURN, text=ANSWER, step=2))
    publish(store, ANSWER, step=2, done=True, final=True)
    deliver(store, slack)

    assert [shown(m) for m in thread(slack, store)] == [ANSWER]
    assert len(slack.calls("chat.startStream")) == 1  # refused once, not asked again
    assert live.read(store, TURN, 1) is None and live.read(store, TURN, 2) is None  # nothing kept


def test_streaming_off_posts_the_answer_once(store, slack):
    publish(store, ANSWER, done=True, final=True)
    store.post_notice(AnswerNotice(turn_id=TURN, text=ANSWER, step=1))
    deliver(store, slack, streaming=False)

    assert [shown(m) for m in thread(slack, store)] == [ANSWER]
    assert not slack.calls("chat.startStream") and live.read(store, TURN, 1) is None


@pytest.mark.parametrize("method", ["chat.appendStream", "chat.stopStream"])
def test_retry_after_on_a_stream_pauses_the_workspace_and_repeats_nothing(store, slack, redis, method):
    publish(store, ANSWER[:20])
    deliver(store, slack)
    slack.inject(Fault(method, status=429, retry_after=7))
    publish(store, ANSWER[:45], done=method == "chat.stopStream", final=True)  # a stop ends a done step
    allow_next_append(store)
    deliver(store, slack)
    assert redis.pttl(slack_pause_key("T111")) > 5_000
    redis.delete(slack_pause_key("T111"))
    publish(store, ANSWER, done=True, final=True)
    deliver(store, slack)

    [message] = thread(slack, store)
    assert shown(message).startswith(ANSWER) and shown(message).count("the answer") == 1
    assert not message["streaming"]


def test_a_turn_whose_worker_died_gets_its_stream_stopped(store, slack):
    publish(store, ANSWER[:30])
    deliver(store, slack)
    set_state(store, "interrupted")
    allow_next_append(store)
    deliver(store, slack)

    [message] = thread(slack, store)
    assert message["text"] == ANSWER[:30] and not message["streaming"]


def test_a_publish_while_the_stream_is_delivered_is_shown_by_that_delivery(store, slack, redis):
    publish(store, ANSWER[:20])
    deliver(store, slack)
    publish(store, ANSWER[:45])
    allow_next_append(store)
    slack.inject(Fault("chat.appendStream", after_work=True, delay_s=1.5))  # a slow answer
    with ThreadPoolExecutor(1) as pool:
        holder = pool.submit(deliver, store, slack)  # has read the step, appends it, waits for Slack
        wait_for(lambda: slack.calls("chat.appendStream"), what="the holder's append")
        publish(store, ANSWER, done=True, final=True)
        assert deliver(store, slack) == 0  # the thread's lock is taken: this run leaves it to the holder
        holder.result()

    [message] = thread(slack, store)
    assert message["text"] == ANSWER and not message["streaming"]  # no sweep seconds later was needed


def test_a_short_answer_written_whole_before_its_stream_starts_is_one_post(store, slack, redis):
    publish(store, ANSWER, done=True, final=True)
    store.post_notice(AnswerNotice(turn_id=TURN, text=ANSWER, step=1))
    slack.inject(Fault("chat.postMessage", after_work=True, delay_s=2))  # Slack took it; the answer is lost
    with pytest.raises(TimeoutError):
        deliver(store, slack, timeout=1)
    deliver(store, slack)

    [message] = thread(slack, store)
    assert shown(message) == ANSWER and [b["type"] for b in message["blocks"]] == [
        "markdown",
        "context_actions",
    ]
    assert message["blocks"][1]["elements"][0]["type"] == "feedback_buttons"
    assert len(slack.calls("chat.postMessage")) == 1 and not slack.calls("chat.startStream")
    assert redis.hget(store.key.redis_key("ledger_notes"), answered_turn_note(TURN)) == b"1"  # clicks count
    assert live.read(store, TURN, 1) is None


def test_a_lost_answer_to_the_stop_carrying_the_last_piece_ends_in_one_complete_message(store, slack):
    publish(store, ANSWER[:20])
    deliver(store, slack)
    slack.inject(Fault("chat.stopStream", after_work=True, delay_s=2))  # Slack took it; the answer is lost
    publish(store, ANSWER, done=True, final=True)
    allow_next_append(store)
    with pytest.raises(TimeoutError):
        deliver(store, slack, timeout=1)
    deliver(store, slack)

    [message] = thread(slack, store)
    assert shown(message).startswith(ANSWER) and shown(message).count("the answer") == 1
    assert not message["streaming"] and len(slack.calls("chat.postMessage")) == 0


def test_a_mention_the_pieces_cut_in_two_reaches_slack_broken_and_so_do_the_tasks(store, slack):
    """The deliverer appends what the model has written so far, wherever it has got to: a
    `<!chan` now and `nel>` later must not join into a ping in the streamed message."""
    words = "Telling <!channel|all> and @here now."
    publish(store, words[:13], tasks=[LiveTask(id="c1", title="<!here>", details="note: @everyone")])
    deliver(store, slack)
    for cut in (20, 28, 30, 32):
        publish(store, words[:cut], tasks=[LiveTask(id="c1", title="<!here>", details="note: @everyone")])
        allow_next_append(store)
        deliver(store, slack)
    publish(store, words, done=True, final=True)
    allow_next_append(store)
    deliver(store, slack)

    [message] = thread(slack, store)
    assert not message["streaming"] and message["text"] == "Telling <\u200b!channel|all> and @\u200bhere now."
    assert [(t["title"], t["details"]) for t in message["tasks"]] == [
        ("<\u200b!here>", "note: @\u200beveryone")
    ]
    pieces = [
        chunk["text"]
        for call in slack.calls()
        if call.method in ("chat.startStream", "chat.appendStream", "chat.stopStream")
        for chunk in call.args.get("chunks") or []
        if chunk["type"] == "markdown_text"
    ]
    assert len(pieces) >= 3 and "".join(pieces) == message["text"]


def test_a_stream_full_of_broken_mentions_stays_within_what_slack_shows(store, slack):
    """Each break is a character more: a step of STREAM_CHARS full of them still fits one
    message when Slack closed the stream and it is completed by an edit (a markdown block)."""
    long = "@here " * (STREAM_CHARS // 6 + 200)
    publish(store, long[:100])
    deliver(store, slack)
    assert slack.close_streams() == 1
    publish(store, long, done=True, final=True)
    allow_next_append(store)
    deliver(store, slack)

    stream, *rest = thread(slack, store)
    assert stream.get("edited") == 1 and len(shown(stream)) <= STREAM_CHARS and rest
    assert all("@here" not in shown(message) for message in (stream, *rest))
    assert "".join(shown(m) for m in (stream, *rest)).replace(BREAK, "").split() == long.split()


class NotesReads(Redis):
    """A real client that notes, per delivery pass (each time it takes the thread's lock), which
    ledger notes it reads from Redis."""

    def __init__(self, redis: Redis) -> None:
        super().__init__(connection_pool=redis.connection_pool)
        self.passes: list[list[str]] = []

    def execute_command(self, *args: Any, **options: Any) -> Any:
        name, key = str(args[0]).upper(), str(args[1]) if len(args) > 1 else ""
        if name == "SET" and key.endswith(":delivering"):
            self.passes.append([])
        elif name == "HMGET" and key.endswith(":ledger_notes") and self.passes:
            self.passes[-1] += [str(field) for field in args[2:]]
        return super().execute_command(*args, **options)


def test_a_delivery_pass_reads_each_ledger_note_from_redis_once(store, slack):
    store.post_notice(
        ProgressNotice(card=TurnCard(turn_id=TURN, state="done", started_at=1.0, updated_at=2.0))
    )
    publish(store, ANSWER, done=True, final=True)
    store.post_notice(AnswerNotice(turn_id=TURN, text=ANSWER, step=1))
    reads = NotesReads(store.redis)

    deliver(SessionStore(reads, store.key), slack)

    assert shown(thread(slack, store)[-1]) == ANSWER
    assert reads.passes and all(len(read) == len(set(read)) for read in reads.passes), reads.passes
