"""A provider's error body never becomes part of a model error: status and error code only.

Each answer below quotes a secret the way real providers quote what they were sent ("Incorrect
API key provided: sk-…"); the error the client raises is what the thread, the wire log and the
worker's log get, so the secret must not be in it, in any form.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from agent.loop._step_records import model_failure_text
from agent.messages import user_message
from agent.model.base import ModelRequest
from agent.model.errors import (
    ContextOverflowError,
    MalformedResponseError,
    ModelError,
    ModelHTTPError,
    RetryableModelError,
    StructureRejectedError,
)
from agent.model.openai import OpenAICompatibleModel
from agent.testing import FakeLLM, Reply

SECRET = "planted-provider-secret-5f1c9a"
STREAM = {"Content-Type": "text/event-stream"}


def failure(fake_llm: FakeLLM, reply: Reply, *, stream: bool = True) -> ModelError:
    fake_llm.script(reply)
    model = OpenAICompatibleModel(fake_llm.base_url, "m", SECRET, stream=stream)
    with pytest.raises(ModelError) as raised:
        asyncio.run(model.complete(ModelRequest(messages=[user_message("hi")])))
    return raised.value


def assert_no_secret(error: ModelError) -> None:
    for shown in (str(error), repr(error), repr(vars(error)), model_failure_text(error)):
        assert SECRET not in shown


@pytest.mark.parametrize("stream", [True, False])
def test_an_auth_error_shows_status_and_code_not_the_body(fake_llm: FakeLLM, stream: bool):
    body = {
        "error": {
            "message": f"Incorrect API key provided: {SECRET}.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    error = failure(fake_llm, Reply(status=401, error=body), stream=stream)
    assert isinstance(error, ModelHTTPError) and error.status == 401
    assert str(error) == "model endpoint answered HTTP 401 (invalid_api_key, invalid_request_error)"
    assert_no_secret(error)


def test_a_structure_rejection_and_an_overflow_keep_their_class_but_not_the_body(fake_llm: FakeLLM):
    rejected = {"error": {"message": f"messages[1].tool_calls: bad id {SECRET}", "type": "invalid_request"}}
    error = failure(fake_llm, Reply(status=400, error=rejected))
    assert isinstance(error, StructureRejectedError) and "HTTP 400 (invalid_request)" in str(error)
    assert_no_secret(error)
    overflow = {"error": {"message": f"maximum context length exceeded near {SECRET}", "code": 1301}}
    error = failure(fake_llm, Reply(status=400, error=overflow))
    assert isinstance(error, ContextOverflowError) and "HTTP 400 (1301)" in str(error)
    assert_no_secret(error)


def test_an_error_in_the_stream_and_a_garbled_chunk_are_described_not_quoted(fake_llm: FakeLLM):
    event = {"error": {"message": f"upstream rejected key {SECRET}", "type": "server_error"}}
    error = failure(fake_llm, Reply(raw_body=f"data: {json.dumps(event)}\n\n".encode(), headers=STREAM))
    assert isinstance(error, RetryableModelError) and "(server_error)" in str(error)
    assert_no_secret(error)
    error = failure(fake_llm, Reply(raw_body=f"data: {{{SECRET}\n\n".encode(), headers=STREAM))
    assert isinstance(error, MalformedResponseError) and "characters" in str(error)
    assert_no_secret(error)


def test_an_answer_nested_past_the_parsers_depth_is_malformed_streamed_or_whole(fake_llm: FakeLLM):
    nested = "[" * 100_000 + "]" * 100_000  # json recurses per bracket: RecursionError, not ValueError
    chunk = f'data: {{"choices": {nested}}}\n\n'.encode()
    assert isinstance(failure(fake_llm, Reply(raw_body=chunk, headers=STREAM)), MalformedResponseError)
    whole = f'{{"choices": {nested}}}'.encode()
    assert isinstance(failure(fake_llm, Reply(raw_body=whole), stream=False), MalformedResponseError)


def test_a_200_that_is_not_a_completion_is_described_by_its_shape(fake_llm: FakeLLM):
    page = f"<html>proxy login for {SECRET}</html>".encode()
    error = failure(fake_llm, Reply(raw_body=page, headers={"Content-Type": "text/html"}), stream=False)
    assert isinstance(error, MalformedResponseError)
    assert str(error) == f"not a chat completion (HTTP 200, text/html, {len(page)} bytes)"
    assert_no_secret(error)


def test_an_unreachable_endpoint_never_shows_credentials_of_its_url():
    model = OpenAICompatibleModel(f"http://user:{SECRET}@127.0.0.1:9/v1", "m")
    with pytest.raises(RetryableModelError) as raised:
        asyncio.run(model.complete(ModelRequest(messages=[user_message("hi")])))
    assert "unreachable" in str(raised.value)
    assert_no_secret(raised.value)
