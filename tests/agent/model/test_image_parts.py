"""Image parts on the wire: the OpenAI shape, a model without vision refusing them as real
providers do, and a token estimate that does not grow with the image's base64 size."""

from __future__ import annotations

import asyncio
import base64

import pytest

from agent.messages import ImageURLPart, MediaURL, Message, Origin, TextPart
from agent.model._openai_format import IMAGE_WITHHELD
from agent.model.base import ModelRequest
from agent.model.errors import ModelError
from agent.model.openai import OpenAICompatibleModel
from agent.testing import FakeLLM, text
from agent.tokens import MEDIA_TOKEN_ESTIMATE, estimate_message

BIG_PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4_000  # ~1 MB: 256,000 "tokens" as text


def with_image(data: bytes = BIG_PNG) -> Message:
    url = f"data:image/png;base64,{base64.b64encode(data).decode()}"
    return Message(
        role="user",
        content=[TextPart(text="the screenshot:"), ImageURLPart(image_url=MediaURL(url=url))],
        origin=Origin(kind="attachments"),
    )


def ask(fake_llm: FakeLLM, message: Message) -> str:
    model = OpenAICompatibleModel(fake_llm.base_url, "m", stream=False)
    return asyncio.run(model.complete(ModelRequest(messages=[message], system="s"))).message.text()


def test_a_model_with_vision_gets_the_image_as_an_image_url_part(fake_llm: FakeLLM):
    fake_llm.vision = True
    fake_llm.script(text("a cat"))
    assert ask(fake_llm, with_image()) == "a cat"
    content = fake_llm.accepted()[0]["messages"][1]["content"]
    assert [part["type"] for part in content] == ["text", "image_url"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")


def test_a_model_without_vision_refuses_an_image_part(fake_llm: FakeLLM):
    with pytest.raises(ModelError):
        ask(fake_llm, with_image())
    assert fake_llm.accepted() == [] and "image_url is only supported" in fake_llm.rejected[0][1]


def test_an_image_costs_a_fixed_estimate_whatever_its_size():
    small, big = estimate_message(with_image(BIG_PNG[:100])), estimate_message(with_image())
    assert small == big < MEDIA_TOKEN_ESTIMATE + 20


def test_a_client_told_its_model_cannot_see_sends_an_earlier_image_as_a_note(fake_llm: FakeLLM):
    """Images entered the history while LLM_VISION was on, and it was switched off: the session
    goes on, the model told an image was left out, instead of every request refused."""
    fake_llm.script(text("I cannot see it"))
    model = OpenAICompatibleModel(fake_llm.base_url, "m", stream=False, vision=False)
    answer = asyncio.run(model.complete(ModelRequest(messages=[with_image()], system="s")))
    assert answer.message.text() == "I cannot see it"
    content = fake_llm.accepted()[0]["messages"][1]["content"]
    assert content == "the screenshot:" + IMAGE_WITHHELD
