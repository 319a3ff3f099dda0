"""Live answers end to end: real web and workers, the fake Slack and the fake model over HTTP.

A turn's steps stream into the thread as the model writes them (text in several appends, tool
calls as tasks); the answer carries feedback buttons whose clicks `/agent status` shows; a
delivery worker killed mid-stream leaves one complete answer; where Slack refuses streaming (a
channel that cannot stream, a person it cannot find) the card and one answer post are what the
thread gets, and a person of another organisation gets the stream named with their own team. An
answer cut by the output limit says so; reasoning a model writes in `<think>` tags is never
posted.
"""

from __future__ import annotations

import json
import threading

import pytest

from agent.testing import Reply
from agent.testing.recorded import recorded
from gateway.listeners.actions import STALE, THANKS
from gateway.render.feedback import FEEDBACK
from gateway.sandbox.fake_slack.state import Fault
from gateway.sandbox.stack import THREADLINE
from jobs.keys import SessionKey
from jobs.session.store import SessionStore
from tests.e2e.sessions import link, response_url, slash_command
from tests.polling import wait_for
from tests.slack_events import block_action, mention
from tests.thread_view import bot_messages, responses, shown

ANSWER = (
    "Here is what I found: the workspace holds one file, and it says hi. Nothing else needed doing, "
    "so I stopped there. Ask again if you want me to change it."
)
STREAMING = {"SLACK_STREAMING": "on"}


def start(stack, fake_slack, words: str) -> SessionKey:
    root = fake_slack.add_user_message("C111", f"<@UBOT0001> {words}", user="W222")
    assert stack.send_event(mention(words, ts=root["ts"])).status_code == 200
    return SessionKey(team="T111", channel="C111", thread_ts=root["ts"])


def answered(fake_slack, key: SessionKey, text: str) -> dict:
    def found() -> dict | None:
        for message in bot_messages(fake_slack, key.channel, key.thread_ts):
            if text in shown(message) and not message.get("streaming"):
                return message
        return None

    return wait_for(found, timeout=60, what="the complete answer")


def test_a_turn_streams_its_steps_and_its_answer_takes_feedback(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(**STREAMING)
    rest = threading.Event()
    fake_llm.script(
        Reply(text="Let me check the workspace.", tool_calls=[("c1", "shell", '{"command": "echo hi"}')]),
        Reply(text=ANSWER, text_every_s=0.1, rest_gate=rest),
    )
    key = start(stack, fake_slack, "what is in the workspace?")

    def answer_streaming() -> bool:
        return any(
            m.get("streaming") and shown(m) and ANSWER.startswith(shown(m))
            for m in bot_messages(fake_slack, key.channel, key.thread_ts)
        )

    wait_for(answer_streaming, timeout=30, what="the answer's stream, started with its first piece")
    rest.set()
    answer = answered(fake_slack, key, ANSWER)

    later = [c for c in fake_slack.calls() if c.method in ("chat.appendStream", "chat.stopStream")]
    chunks = [chunk for c in later if c.args["ts"] == answer["ts"] for chunk in c.args.get("chunks") or []]
    texts = [chunk["text"] for chunk in chunks if chunk["type"] == "markdown_text"]
    assert texts and answer["text"] == ANSWER  # arrived in pieces (the rest after the start), whole and once
    assert not [c for c in fake_slack.calls("chat.postMessage") if ANSWER[:30] in str(c.args)]
    step = next(
        m for m in bot_messages(fake_slack, "C111", key.thread_ts) if "Let me check" in m.get("text", "")
    )
    assert [(t["id"], t["status"], t.get("details")) for t in step["tasks"]] == [
        ("c1", "complete", "command: echo hi")
    ]
    assert float(step["ts"]) < float(answer["ts"])
    cards = [m for m in bot_messages(fake_slack, "C111", key.thread_ts) if "Working" in shown(m)]
    assert cards == []  # the steps show their calls: no card repeats them

    [element] = answer["blocks"][-1]["elements"]
    down = element["negative_button"]["value"]
    assert rate(stack, fake_slack, key, answer, down, user="W333") == THANKS
    # forged values: another turn, another thread than the one the buttons are in
    forged_turn = json.dumps({**json.loads(down), "t": "turn-made-up.000000", "v": "up"})
    assert rate(stack, fake_slack, key, answer, forged_turn, user="W444") == STALE
    other = key.model_copy(update={"thread_ts": "1700000000.000009"})
    assert rate(stack, fake_slack, other, answer, down) == STALE  # the buttons' thread is not the value's
    status = slash_command(stack, fake_slack, f"status {link(fake_slack, key)}", user="W222")
    assert "👍 0 · 👎 1" in status and "<@W333>" in status and "W444" not in status


def rate(stack, fake_slack, key: SessionKey, answer: dict, value: str, user: str = "W222") -> str:
    """Click a feedback button under the answer (in `key`'s thread); returns the clicker's answer."""
    payload = block_action(
        FEEDBACK, value, user=user, message_ts=answer["ts"], response_url=response_url(fake_slack)
    )
    payload["container"]["thread_ts"] = key.thread_ts
    payload["actions"][0]["type"] = "feedback_buttons"
    assert stack.send_interaction(payload).status_code == 200
    return str(responses(fake_slack)[-1]["text"])


def test_a_delivery_worker_killed_mid_stream_leaves_one_complete_answer(
    make_stack, fake_slack, fake_llm, redis
):
    stack = make_stack(workers=0, **STREAMING)
    stack.spawn("turns", [THREADLINE, "worker", "--role", "turns"])
    stack.spawn("delivery", [THREADLINE, "worker", "--role", "delivery"])
    fake_llm.script(Reply(text=ANSWER, text_every_s=0.5))  # ~5 s of writing
    key = start(stack, fake_slack, "tell me slowly")

    def streaming() -> bool:
        return any(
            m.get("streaming") and m.get("appends") for m in bot_messages(fake_slack, "C111", key.thread_ts)
        )

    wait_for(streaming, timeout=30, what="a stream with appended text")
    stack.kill("delivery")
    stack.spawn("delivery-again", [THREADLINE, "worker", "--role", "delivery"])
    answer = answered(fake_slack, key, ANSWER)

    wait_for(lambda: SessionStore(redis, key).meta.read().state == "idle", what="the turn's end")
    texts = [shown(m) for m in bot_messages(fake_slack, "C111", key.thread_ts)]
    assert sum(ANSWER[:40] in t for t in texts) == 1 and shown(answer).count(ANSWER) == 1


def test_where_slack_refuses_streaming_the_card_and_one_post_answer(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(**STREAMING)
    fake_slack.refuse_streaming("C111")
    fake_llm.script(
        Reply(text="Checking first.", tool_calls=[("c1", "shell", '{"command": "echo hi"}')]),
        Reply(text=ANSWER),
    )
    key = start(stack, fake_slack, "what is in the workspace?")
    answer = answered(fake_slack, key, ANSWER)

    wait_for(lambda: SessionStore(redis, key).meta.read().state == "idle", what="the turn's end")
    messages = bot_messages(fake_slack, "C111", key.thread_ts)
    assert [c.outcome for c in fake_slack.calls("chat.startStream")] == [
        "method_not_supported_for_channel_type"
    ]
    assert not any(m.get("tasks") is not None for m in messages)
    card = next(m for m in messages if "echo hi" in shown(m))
    assert float(card["ts"]) < float(answer["ts"]) and shown(answer) == ANSWER


def test_a_slack_connect_person_gets_the_answer_streamed_named_with_their_own_team(
    make_stack, fake_slack, fake_llm, redis
):
    """Streaming names the recipient's team; for a person of another organisation the host
    workspace is the wrong one and Slack answers user_not_found. The stream is started again
    with the team users.info gives them, and the answer is streamed, once."""
    stack = make_stack(SLACK_ALLOW_EXTERNAL="true", **STREAMING)
    fake_slack.add_external_user("W666", team="T999")
    fake_llm.script(
        Reply(text="Checking first.", tool_calls=[("c1", "shell", '{"command": "echo hi"}')]),
        Reply(text=ANSWER),
    )
    root = fake_slack.add_user_message("C111", "<@UBOT0001> what is in the workspace?", user="W666")
    assert (
        stack.send_event(mention("what is in the workspace?", ts=root["ts"], user="W666")).status_code == 200
    )
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    answer = answered(fake_slack, key, ANSWER)

    wait_for(lambda: SessionStore(redis, key).meta.read().state == "idle", what="the turn's end")
    starts = fake_slack.calls("chat.startStream")
    assert [c.outcome for c in starts][:2] == ["user_not_found", "ok"]
    assert all(c.args.get("recipient_team_id") == "T999" for c in starts[1:])
    texts = [shown(m) for m in bot_messages(fake_slack, "C111", key.thread_ts)]
    assert sum(ANSWER in t for t in texts) == 1 and ANSWER in shown(answer)


def test_an_answer_cut_by_the_output_limit_says_so_in_the_thread(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(**STREAMING)
    fake_llm.script(Reply(text=ANSWER, finish_reason="length"))
    key = start(stack, fake_slack, "explain the build")
    answer = answered(fake_slack, key, ANSWER)
    wait_for(lambda: SessionStore(redis, key).meta.read().state == "idle", what="the turn's end")
    assert shown(answer).endswith("cut off: the model reached its output limit)_")


@pytest.mark.parametrize("streaming", ["on", "off"])
def test_reasoning_a_model_writes_in_think_tags_is_never_posted(
    make_stack, fake_slack, fake_llm, redis, streaming
):
    """vLLM serving a model without a reasoning parser, as recorded from its documentation."""
    stack = make_stack(SLACK_STREAMING=streaming)
    fake_llm.script(recorded("vllm", "final_think_tags"))
    key = start(stack, fake_slack, "what is here?")
    wait_for(lambda: SessionStore(redis, key).meta.read().state == "idle", what="the turn's end")
    answer = answered(fake_slack, key, "All done.")
    posted = [shown(m) for m in bot_messages(fake_slack, "C111", key.thread_ts)]
    assert shown(answer) == "All done."
    assert not any("think>" in text or "The listing answers it" in text for text in posted)


def test_a_person_slack_cannot_find_even_in_their_own_team_gets_the_answer_posted(
    make_stack, fake_slack, fake_llm, redis
):
    stack = make_stack(SLACK_ALLOW_EXTERNAL="true", **STREAMING)
    fake_slack.add_external_user("W666", team="T999")
    fake_slack.inject(Fault("chat.startStream", count=2, error="user_not_found"))
    fake_llm.script(
        Reply(text="Checking first.", tool_calls=[("c1", "shell", '{"command": "echo hi"}')]),
        Reply(text=ANSWER),
    )
    root = fake_slack.add_user_message("C111", "<@UBOT0001> explain the build", user="W666")
    assert stack.send_event(mention("explain the build", ts=root["ts"], user="W666")).status_code == 200
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    answer = answered(fake_slack, key, ANSWER)

    wait_for(lambda: SessionStore(redis, key).meta.read().state == "idle", what="the turn's end")
    assert [c.outcome for c in fake_slack.calls("chat.startStream")] == ["fault:200:user_not_found"] * 2
    texts = [shown(m) for m in bot_messages(fake_slack, "C111", key.thread_ts)]
    assert sum(ANSWER in t for t in texts) == 1 and shown(answer) == ANSWER
