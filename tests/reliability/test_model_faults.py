"""Model faults through the whole product: each ends in a valid next request or a clear message."""

from __future__ import annotations

from agent.testing import FakeLLM, Reply, text
from gateway.sandbox.stack import Stack
from tests.e2e.turns import Session
from tests.polling import wait_for


def finished(session: Session) -> str:
    wait_for(lambda: session.state() in ("idle", "failed"), timeout=60, what="the turn to end")
    return session.state()


def test_5xx_and_429_storms_are_retried_then_answered(stack: Stack, redis, fake_slack, fake_llm: FakeLLM):
    fake_llm.script(
        Reply(status=503), Reply(status=429, headers={"Retry-After": "1"}), Reply(status=500), text("fine")
    )
    session = Session(redis, fake_slack, "hello")
    assert finished(session) == "idle"
    wait_for(lambda: "fine" in session.bot_texts(), what="the answer")
    assert len(fake_llm.requests) == 4


def test_a_stream_cut_mid_answer_is_retried(stack: Stack, redis, fake_slack, fake_llm: FakeLLM):
    fake_llm.script(
        Reply(text="a long answer that will be cut", cut_stream_after=2), text("the whole answer")
    )
    session = Session(redis, fake_slack, "hello")
    assert finished(session) == "idle"
    wait_for(lambda: "the whole answer" in session.bot_texts(), what="the answer")
    assert "cut" not in " ".join(session.bot_texts())


def test_malformed_sse_twice_ends_with_a_clear_message(stack: Stack, redis, fake_slack, fake_llm: FakeLLM):
    garbled = Reply(raw_body=b"data: {nope\n\n", headers={"Content-Type": "text/event-stream"})
    fake_llm.script(garbled, garbled)
    session = Session(redis, fake_slack, "hello")
    assert finished(session) == "failed"
    wait_for(
        lambda: any(t.startswith("Sorry, I could not finish") for t in session.bot_texts()),
        what="the apology",
    )


def test_invalid_arguments_unknown_tools_and_duplicate_ids_lead_to_a_valid_next_request(
    stack: Stack, redis, fake_slack, fake_llm: FakeLLM
):
    fake_llm.script(
        Reply(
            tool_calls=[
                ("d", "read_file", '{"path": '),
                ("d", "teleport", "{}"),
                ("e", "list_dir", '{"path": "."}'),
            ]
        ),
        text("recovered"),
    )
    session = Session(redis, fake_slack, "do things")
    assert finished(session) == "idle"
    assert fake_llm.rejected == []
    follow_up = fake_llm.accepted()[1]["messages"]
    results = {m["tool_call_id"]: m["content"] for m in follow_up if m["role"] == "tool"}
    assert set(results) == {"d", "d__2", "e"}
    assert "not valid JSON" in results["d"] and 'Tool "teleport" not found' in results["d__2"]


def test_a_model_timeout_is_retried(tmp_path, redis, redis_url, fake_slack, fake_llm: FakeLLM):
    stack = Stack(tmp_path, redis_url, fake_slack.api_url, fake_llm.base_url, LLM_TIMEOUT_SECONDS="1").start()
    try:
        fake_llm.script(Reply(text="too late", delay_s=3), text("after the timeout"))
        session = Session(redis, fake_slack, "hello")
        assert finished(session) == "idle"
        wait_for(lambda: "after the timeout" in session.bot_texts(), what="the answer")
        assert "too late" not in " ".join(session.bot_texts())
    finally:
        stack.stop()


def test_a_dropped_connection_is_retried(stack: Stack, redis, fake_slack, fake_llm: FakeLLM):
    fake_llm.script(Reply(text="x", cut_stream_after=0), text("after the drop"))
    session = Session(redis, fake_slack, "hello")
    assert finished(session) == "idle"
    wait_for(lambda: "after the drop" in session.bot_texts(), what="the answer")


def test_a_provider_that_keeps_rejecting_the_structure_ends_with_a_message(
    stack, redis, fake_slack, fake_llm
):
    rejection = Reply(status=400, error={"error": {"message": "messages: tool_call_id mismatch"}})
    fake_llm.script(rejection, rejection)
    session = Session(redis, fake_slack, "hello")
    assert finished(session) == "failed"
    assert len(fake_llm.requests) == 2  # the original and one strict resend, no more
    wait_for(lambda: any("rejected the request twice" in t for t in session.bot_texts()), what="the message")
