"""The Redis client every process builds."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor

from redis._parsers import _HiredisParser
from redis.connection import HiredisRespSerializer

from agent.messages import ImageURLPart, MediaURL, Message, TextPart, user_message
from agent.model._openai_format import IMAGE_WITHHELD
from agent.model.base import ModelRequest
from jobs.aio_redis import aio_twin
from jobs.redis_connect import RedisTarget, connect
from jobs.runtime import build_model
from jobs.settings import Settings


def test_the_client_packs_and_parses_with_hiredis(redis_url: str) -> None:
    # The `redis[hiredis]` extra: a mention's one round trip costs a third less CPU with it.
    client = connect(RedisTarget(redis_url))
    connection = client.connection_pool.get_connection()
    try:
        assert isinstance(connection._parser, _HiredisParser)
        assert isinstance(connection._command_packer, HiredisRespSerializer)
        assert client.echo("ünïcode ✓") == "ünïcode ✓".encode()
    finally:
        client.connection_pool.release(connection)
        client.close()


BUSY_AT_ONCE = 150  # more than redis-py's default pool of 100: a worker of 200 turns gets there


def test_more_callers_at_once_than_the_pool_holds_wait_for_a_connection(redis_url: str) -> None:
    client = connect(RedisTarget(redis_url))
    empty = f"tl:test:empty:{uuid.uuid4().hex}"
    with ThreadPoolExecutor(BUSY_AT_ONCE) as threads:  # each holds a connection for 0.5 s
        answers = list(threads.map(lambda _: client.blpop([empty], timeout=0.5), range(BUSY_AT_ONCE)))
    assert answers == [None] * BUSY_AT_ONCE  # none refused with "Too many connections"


def test_more_tasks_at_once_than_the_async_pool_holds_wait_for_a_connection(redis_url: str) -> None:
    client = connect(RedisTarget(redis_url))
    empty = f"tl:test:empty:{uuid.uuid4().hex}"

    async def main() -> list[object]:
        twin = aio_twin(client)
        try:
            return await asyncio.gather(*(twin.blpop([empty], timeout=0.5) for _ in range(BUSY_AT_ONCE)))
        finally:
            await twin.aclose()

    assert asyncio.run(main()) == [None] * BUSY_AT_ONCE


def test_the_configured_model_sends_the_extra_body_and_asks_for_usage(fake_llm) -> None:
    settings = Settings.load(
        LLM_BASE_URL=fake_llm.base_url, LLM_MODEL="m", LLM_EXTRA_BODY={"reasoning_effort": "high"}
    )
    answer = asyncio.run(build_model(settings).complete(ModelRequest(messages=[user_message("hi")])))
    assert answer.usage is not None and answer.usage.input_tokens > 0
    sent = fake_llm.accepted()[0]
    assert sent["reasoning_effort"] == "high" and sent["stream_options"] == {"include_usage": True}


def test_the_configured_model_withholds_images_while_llm_vision_is_off(fake_llm) -> None:
    image = ImageURLPart(image_url=MediaURL(url="data:image/png;base64,iVBORw0KGgo="))
    history = [Message(role="user", content=[TextPart(text="look"), image])]
    for vision in (True, False):
        fake_llm.vision = vision
        settings = Settings.load(LLM_BASE_URL=fake_llm.base_url, LLM_MODEL="m", LLM_VISION=vision)
        asyncio.run(build_model(settings).complete(ModelRequest(messages=history)))
    with_vision, without = (sent["messages"][-1]["content"] for sent in fake_llm.accepted())
    assert [part["type"] for part in with_vision] == ["text", "image_url"]
    assert without == "look" + IMAGE_WITHHELD
    assert fake_llm.rejected == []
