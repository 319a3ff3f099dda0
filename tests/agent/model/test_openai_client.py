"""The OpenAI-compatible client against the fake provider over real HTTP."""

from __future__ import annotations

import asyncio

import pytest

from agent.messages import Message, TextPart, ToolCall, user_message
from agent.model.base import ModelRequest
from agent.model.errors import (
    ContextOverflowError,
    MalformedResponseError,
    ModelHTTPError,
    RetryableModelError,
    StructureRejectedError,
)
from agent.model.openai import OpenAICompatibleModel
from agent.model.retrying import RetryingModel, RetryPolicy
from agent.testing import FakeLLM, Reply, calls, text


class Heard:
    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def on_text(self, delta: str) -> None:
        self.events.append(("text", delta))

    def on_tool_call(self, call: ToolCall) -> None:
        self.events.append(("call", call.id))

    def on_restart(self) -> None:
        self.events.append(("restart", None))


def ask(model, request: ModelRequest, listener=None):
    return asyncio.run(model.complete(request, listener))


def request(*messages: Message) -> ModelRequest:
    return ModelRequest(messages=list(messages) or [user_message("hi")], system="be brief")


@pytest.mark.parametrize("stream", [True, False])
def test_text_answer(fake_llm: FakeLLM, stream: bool):
    fake_llm.script(text("a fairly long answer that arrives in several stream chunks"))
    model = OpenAICompatibleModel(fake_llm.base_url, "m", "sk", stream=stream)
    response = ask(model, request())
    assert response.message.text() == "a fairly long answer that arrives in several stream chunks"
    assert response.finish_reason == "stop"
    sent = fake_llm.accepted()[0]
    assert sent["messages"][0] == {"role": "system", "content": "be brief"}
    assert sent.get("stream", False) is stream


def test_streamed_tool_calls_are_announced_once_each_in_order(fake_llm: FakeLLM):
    fake_llm.script(calls(("c1", "read_file", {"path": "a.txt"}), ("c2", "grep", {"pattern": "x" * 40})))
    heard = Heard()
    response = ask(OpenAICompatibleModel(fake_llm.base_url, "m"), request(), heard)
    assert [c.id for c in response.message.tool_calls] == ["c1", "c2"]
    assert response.message.tool_calls[1].arguments == '{"pattern": "' + "x" * 40 + '"}'
    assert [e for e in heard.events if e[0] == "call"] == [("call", "c1"), ("call", "c2")]
    assert response.finish_reason == "tool_calls"


def test_history_with_a_tool_exchange_is_sent_in_openai_shape(fake_llm: FakeLLM):
    call = ToolCall(id="c1", name="read_file", arguments='{"path":"a"}')
    history = [
        user_message("read a"),
        Message(role="assistant", content=[TextPart(text="reading")], tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", content=[TextPart(text="body")]),
    ]
    ask(OpenAICompatibleModel(fake_llm.base_url, "m"), request(*history))
    sent = fake_llm.accepted()[0]["messages"][1:]
    assert sent[1] == {
        "role": "assistant",
        "content": "reading",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a"}'}}
        ],
    }
    assert sent[2] == {"role": "tool", "tool_call_id": "c1", "content": "body"}


def test_unpaired_call_is_rejected_as_a_structure_error(fake_llm: FakeLLM):
    dangling = Message(role="assistant", tool_calls=[ToolCall(id="c9", name="x", arguments="{}")])
    with pytest.raises(StructureRejectedError):
        ask(OpenAICompatibleModel(fake_llm.base_url, "m"), request(user_message("hi"), dangling))


def test_oversized_request_is_a_context_overflow(fake_llm: FakeLLM):
    fake_llm.context_window = 50
    with pytest.raises(ContextOverflowError):
        ask(OpenAICompatibleModel(fake_llm.base_url, "m"), request(user_message("word " * 400)))


def test_other_client_errors_are_plain_http_errors(fake_llm: FakeLLM):
    fake_llm.script(Reply(status=401, error={"error": {"message": "invalid api key"}}))
    with pytest.raises(ModelHTTPError) as raised:
        ask(OpenAICompatibleModel(fake_llm.base_url, "m"), request())
    assert raised.value.status == 401


def test_malformed_stream_and_cut_stream(fake_llm: FakeLLM):
    model = OpenAICompatibleModel(fake_llm.base_url, "m")
    fake_llm.script(Reply(raw_body=b"data: {not json\n\n", headers={"Content-Type": "text/event-stream"}))
    with pytest.raises(MalformedResponseError):
        ask(model, request())
    fake_llm.script(Reply(text="this answer will be cut", cut_stream_after=2))
    with pytest.raises(RetryableModelError, match="cut") as raised:
        ask(model, request())
    assert raised.value.cause == "stream_cut"


def test_retry_after_is_honoured_and_the_listener_is_told_to_restart(fake_llm: FakeLLM):
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    fake_llm.script(Reply(status=429, headers={"Retry-After": "7"}), Reply(status=503), text("finally"))
    heard = Heard()
    retried: list[tuple[str, float]] = []
    model = RetryingModel(
        OpenAICompatibleModel(fake_llm.base_url, "m"),
        RetryPolicy(base_delay_s=2),
        sleep=sleep,
        on_retry=lambda cause, delay: retried.append((cause, delay)),
    )
    response = ask(model, request(), heard)
    assert response.message.text() == "finally"
    assert retried == [("rate_limited", 7.0), ("server_error", waits[1])]  # the observer hears each
    assert waits[0] == 7.0
    assert 1.0 <= waits[1] <= 4.0  # back-off with jitter for attempt 2
    assert [e for e in heard.events if e[0] == "restart"] == [("restart", None)] * 2
    assert len(fake_llm.requests) == 3


def test_retries_give_up_after_the_policy_attempts(fake_llm: FakeLLM):
    async def sleep(seconds: float) -> None:
        return None

    fake_llm.script(*[Reply(status=500)] * 3)
    model = RetryingModel(OpenAICompatibleModel(fake_llm.base_url, "m"), RetryPolicy(attempts=3), sleep=sleep)
    with pytest.raises(RetryableModelError):
        ask(model, request())
    assert len(fake_llm.requests) == 3


def test_unreachable_endpoint_is_retryable():
    model = OpenAICompatibleModel("http://127.0.0.1:9/v1", "m")
    with pytest.raises(RetryableModelError, match="unreachable") as raised:
        ask(model, request())
    assert raised.value.cause == "unreachable"
