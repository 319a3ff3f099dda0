"""What a serious provider expects of the client: reused connections, usage asked for and read
wherever it comes, reasoning sent back to thinking models, provider-specific fields merged."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import httpx
import pytest

from agent.messages import Message, TextPart, ThinkPart, ToolCall, tool_message, user_message
from agent.model.base import ModelRequest, Usage
from agent.model.connections import CALLS_PER_CLIENT, ConnectionPool
from agent.model.errors import ModelHTTPError
from agent.model.openai import OpenAICompatibleModel
from agent.testing import FakeLLM, Reply, calls, text


def request(*messages: Message) -> ModelRequest:
    return ModelRequest(messages=list(messages) or [user_message("hi")], system="be brief")


def test_calls_on_a_long_lived_loop_share_one_connection_and_others_do_not(fake_llm: FakeLLM):
    loop = asyncio.new_event_loop()
    pool = ConnectionPool(long_lived_loop=lambda: loop)
    pooled = OpenAICompatibleModel(fake_llm.base_url, "m", pool=pool)
    try:
        for _ in range(3):
            assert loop.run_until_complete(pooled.complete(request())).message.text() == "ok"
        assert fake_llm.connections == 1
        for _ in range(2):  # asyncio.run: a loop of its own each time, so a client of its own
            asyncio.run(pooled.complete(request()))
        assert fake_llm.connections == 3
    finally:
        loop.run_until_complete(pool.aclose())
        loop.close()


def test_two_endpoints_on_one_pool_never_share_a_client(fake_llm: FakeLLM):
    other = FakeLLM().start()
    loop = asyncio.new_event_loop()
    pool = ConnectionPool(long_lived_loop=lambda: loop)
    try:
        other.script(text("from the other"))
        urls = (fake_llm.base_url, other.base_url)
        first, second = (OpenAICompatibleModel(url, "m", pool=pool) for url in urls)
        loop.run_until_complete(first.complete(request()))
        answer = loop.run_until_complete(second.complete(request()))
        assert answer.message.text() == "from the other"
        assert (fake_llm.connections, other.connections) == (1, 1)
    finally:
        loop.run_until_complete(pool.aclose())
        loop.close()
        other.stop()


@pytest.mark.parametrize("stream", [True, False])
def test_usage_is_asked_for_and_read_with_the_cached_part(stream: bool):
    fake = FakeLLM(cached_tokens=7).start()
    try:
        response = asyncio.run(OpenAICompatibleModel(fake.base_url, "m", stream=stream).complete(request()))
        sent = fake.accepted()[0]
        prompt = len(json.dumps(sent["messages"])) // 4
        assert response.usage == Usage(input_tokens=prompt, output_tokens=1, cached_tokens=7)
        assert ("stream_options" in sent) is stream
    finally:
        fake.stop()


def test_a_stream_that_was_not_asked_for_usage_brings_none(fake_llm: FakeLLM):
    unasked = {"stream_options": {"include_usage": False}}
    model = OpenAICompatibleModel(fake_llm.base_url, "m", extra_body=unasked)
    assert asyncio.run(model.complete(request())).usage is None


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        # DeepSeek
        ({"prompt_tokens": 90, "completion_tokens": 9, "prompt_cache_hit_tokens": 60}, (90, 9, 60)),
        ({"prompt_tokens": 90, "completion_tokens": 9, "cached_tokens": 30}, (90, 9, 30)),  # Moonshot
        ({"prompt_tokens": "90", "completion_tokens": -1}, (0, 0, 0)),  # hostile: nothing counts
    ],
)
def test_usage_inside_the_final_choice_and_in_each_providers_words(fake_llm: FakeLLM, usage, expected):
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": "hi"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "usage": usage}]},
    ]
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    fake_llm.script(Reply(raw_body=body.encode(), headers={"Content-Type": "text/event-stream"}))
    got = asyncio.run(OpenAICompatibleModel(fake_llm.base_url, "m").complete(request())).usage
    assert got is not None
    assert (got.input_tokens, got.output_tokens, got.cached_tokens) == expected


def _tool_turn(model: OpenAICompatibleModel, fake: FakeLLM) -> list[Message]:
    """One step that calls a tool and its result: the history the next request carries."""
    history = [user_message("list files")]
    step = asyncio.run(model.complete(request(*history))).message
    return [*history, step, tool_message(step.tool_calls[0].id, "a.txt")]


@pytest.mark.parametrize("stream", [True, False])
def test_a_thinking_models_empty_reasoning_goes_back_with_its_tool_call(stream: bool):
    fake = FakeLLM(thinking=True).start()
    try:
        model = OpenAICompatibleModel(fake.base_url, "m", stream=stream)
        fake.script(calls(("c1", "ls", {})), text("done"))
        history = _tool_turn(model, fake)
        assert history[1].content == [ThinkPart(think="", field="reasoning_content")]
        assert asyncio.run(model.complete(request(*history))).message.text() == "done"
        assert fake.accepted()[1]["messages"][2]["reasoning_content"] == ""
    finally:
        fake.stop()


def test_a_thinking_provider_refuses_a_tool_call_without_its_reasoning():
    fake = FakeLLM(thinking=True).start()
    try:
        call = ToolCall(id="c1", name="ls", arguments="{}")
        bare = [user_message("go"), Message(role="assistant", tool_calls=[call]), tool_message("c1", "x")]
        with pytest.raises(ModelHTTPError) as raised:
            asyncio.run(OpenAICompatibleModel(fake.base_url, "m").complete(request(*bare)))
        assert raised.value.status == 400
        assert "reasoning_content" in fake.rejected[0][1]
    finally:
        fake.stop()


def test_reasoning_is_kept_for_tool_calls_and_dropped_for_answers_of_earlier_turns(fake_llm: FakeLLM):
    call = ToolCall(id="c1", name="ls", arguments="{}")
    old_call = ToolCall(id="c0", name="ls", arguments="{}")
    history = [
        user_message("one"),
        Message(role="assistant", content=[ThinkPart(think="plan"), TextPart(text="answer")]),
        user_message("two"),
        Message(role="assistant", tool_calls=[old_call]),  # from before thinking was switched on
        tool_message("c0", "x"),
        Message(role="assistant", content=[ThinkPart(think="look")], tool_calls=[call]),
        tool_message("c1", "y"),
        Message(role="assistant", content=[ThinkPart(think="sum up"), TextPart(text="so far")]),
    ]
    asyncio.run(OpenAICompatibleModel(fake_llm.base_url, "m").complete(request(*history)))
    sent = fake_llm.accepted()[0]["messages"][1:]
    reasoning = [m.get("reasoning_content") for m in sent if m["role"] == "assistant"]
    assert reasoning == [None, "", "look", "sum up"]


def test_the_extra_body_is_merged_into_every_request(fake_llm: FakeLLM):
    extra = {"reasoning_effort": "high", "thinking": {"type": "enabled"}, "max_completion_tokens": 4000}
    model = OpenAICompatibleModel(fake_llm.base_url, "m", extra_body=extra)
    asyncio.run(model.complete(ModelRequest(messages=[user_message("hi")], max_output_tokens=500)))
    asyncio.run(model.complete(request()))
    capped, plain = fake_llm.accepted()
    assert capped["reasoning_effort"] == "high" and capped["thinking"] == {"type": "enabled"}
    assert capped["max_completion_tokens"] == 500 and "max_tokens" not in capped  # the stricter cap
    assert plain["max_completion_tokens"] == 4000
    assert plain["stream_options"] == {"include_usage": True}


def test_a_busy_loop_spreads_its_calls_so_no_client_carries_more_than_its_share():
    loop = asyncio.new_event_loop()
    pool = ConnectionPool(long_lived_loop=lambda: loop)
    made: list[httpx.AsyncClient] = []

    def make(limits: httpx.Limits) -> httpx.AsyncClient:
        made.append(httpx.AsyncClient(limits=limits))
        return made[-1]

    async def calls_at_once(count: int) -> list[int]:
        release, held = asyncio.Event(), []

        async def call() -> None:
            async with pool.client("endpoint", make) as client:
                held.append(made.index(client))
                await release.wait()

        tasks = [asyncio.create_task(call()) for _ in range(count)]
        while len(held) < count:
            await asyncio.sleep(0)
        release.set()
        await asyncio.gather(*tasks)
        return held

    try:
        held = loop.run_until_complete(calls_at_once(2 * CALLS_PER_CLIENT + 1))
        assert sorted(Counter(held).values()) == [1, CALLS_PER_CLIENT, CALLS_PER_CLIENT]
        assert loop.run_until_complete(calls_at_once(1)) == [0]  # a quiet moment: the first again
        assert len(made) == 3
    finally:
        loop.run_until_complete(pool.aclose())
        loop.close()
