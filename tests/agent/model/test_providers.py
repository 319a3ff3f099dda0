"""Each provider a team may plug in, as it really answers (agent/testing/providers/*.json, written
from each provider's documentation): its recorded answers replayed over HTTP to the real client
and, for the two-step turn, the real loop and tools.

- A thinking answer with two parallel tool calls, then the final answer: what the turn answers
  (what is posted) is the answer's text alone, and the next request carries both calls, their
  results and the reasoning in the form that provider takes back (DeepSeek and Kimi reject a
  tool-call message without it: the fake does too for them).
- The final answer whole (not streamed) reads as the streamed one, usage included.
- Reasoning a model writes as `<think>` in its text (a model served without a reasoning parser)
  never reaches the text, streamed or whole.
- A tool call cut off by the output limit is not run; the model is told and answers next. An
  answer cut off mid-text is posted saying so.
- An overflow, a rate limit and a used-up quota end as the loop's own classes: the context is
  compacted, the call retried, or the turn fails at once with the reason.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agent.loop.turn_loop import CUT_ANSWER_NOTE, LoopConfig, TurnOutcome
from agent.messages import ThinkPart, ToolCall, user_message
from agent.model.base import ModelRequest
from agent.model.errors import ContextOverflowError, QuotaExhaustedError, RetryableModelError
from agent.model.openai import OpenAICompatibleModel, takes_prompt_cache_key
from agent.testing import FakeLLM
from agent.testing.recorded import PROVIDERS, has, provider, recorded
from tests.agent.loop.harness import MemorySink, run_turn

REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")
# Cached prompt tokens each recorded final answer reports, in that provider's own field.
CACHED = {"deepseek": 1152, "kimi": 1024, "openai": 1152, "openrouter": 1280, "vllm": 512}


def fake_for(name: str) -> FakeLLM:
    """Kimi and DeepSeek answer 400 to a tool-call message without its `reasoning_content`."""
    return FakeLLM(thinking=provider(name)["facts"]["reasoning_back"] == "reasoning_content").start()


def streamed_reasoning(name: str, answer: str) -> tuple[str, list[dict[str, Any]]]:
    """The reasoning text and OpenRouter-style details a recorded stream carries."""
    text, details = "", []
    for line in provider(name)["answers"][answer]["sse"]:
        if line.startswith("data: {"):
            for choice in json.loads(line[len("data: ") :]).get("choices") or []:
                delta = choice.get("delta") or {}
                text += delta.get("reasoning_content") or delta.get("reasoning") or ""
                details += delta.get("reasoning_details") or []
    return text, details


class Heard:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def on_text(self, delta: str) -> None:
        self.texts.append(delta)

    def on_tool_call(self, call: ToolCall) -> None:
        pass

    def on_restart(self) -> None:
        self.texts.clear()


def complete(fake: FakeLLM, *, stream: bool = True, listener: Heard | None = None) -> Any:
    model = OpenAICompatibleModel(fake.base_url, "m", stream=stream)
    request = ModelRequest(messages=[user_message("what is here?")], system="be brief")
    return asyncio.run(model.complete(request, listener))


def turn(
    name: str, workspace: Path, *answers: str, config: LoopConfig | None = None, **model_options: Any
) -> tuple[TurnOutcome, list[dict[str, Any]]]:
    """A turn through the real loop, tools and client (built with `model_options`), `name`'s
    recorded `answers` in turn; what it ended with, and the requests the provider accepted
    (none may be refused)."""
    (workspace / "docs").mkdir(exist_ok=True)
    fake = fake_for(name)
    try:
        fake.script(*(recorded(name, answer) for answer in answers))
        sink = MemorySink()
        sink.append_user("what is here?")
        model = OpenAICompatibleModel(fake.base_url, "m", **model_options)
        outcome = run_turn(sink, fake.base_url, workspace, model=model, config=config)
        assert fake.rejected == []
        return outcome, fake.accepted()
    finally:
        fake.stop()


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_two_step_tool_turn_posts_the_answer_and_sends_the_reasoning_back(name: str, tmp_path: Path):
    outcome, requests = turn(name, tmp_path, "tool_calls", "final")
    assert (outcome.reason, outcome.answer) == ("completed", "All done.")
    sent = requests[1]["messages"]
    [step] = [m for m in sent if m["role"] == "assistant"]
    assert [json.loads(c["function"]["arguments"]) for c in step["tool_calls"]] == [
        {"path": "."},
        {"path": "docs"},
    ]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == [c["id"] for c in step["tool_calls"]]
    facts = provider(name)["facts"]
    # Where the provider documents no field to send it back in (vLLM), it goes in the one it came in.
    back = (
        facts["reasoning_back"].split()[0]
        if not facts["reasoning_back"].startswith("none")
        else facts["reasoning_in"].split()[0]
    )
    reasoning, details = streamed_reasoning(name, "tool_calls")
    if details:  # OpenRouter: the details, unmodified, pieces of one index joined
        assert step["reasoning_details"][0]["text"] == reasoning
        assert step["reasoning_details"][0]["signature"] == next(
            d["signature"] for d in details if d["signature"]
        )
    elif reasoning:
        assert step[back] == reasoning == "I should look at the files."
    else:
        assert not set(REASONING_FIELDS) & set(step)


@pytest.mark.parametrize("name", PROVIDERS)
def test_the_whole_final_answer_reads_as_the_streamed_one(name: str):
    fake = fake_for(name)
    try:
        fake.script(recorded(name, "final"), recorded(name, "final_json"))
        streamed, whole = complete(fake), complete(fake, stream=False)
    finally:
        fake.stop()
    for response in (streamed, whole):
        assert response.message.text() == "All done."
        assert response.usage is not None and response.usage.input_tokens > 0
    assert streamed.usage.cached_tokens == CACHED.get(name, 0)
    think = [[p.think for p in r.message.content if isinstance(p, ThinkPart)] for r in (streamed, whole)]
    assert think[0] == think[1]


@pytest.mark.parametrize("name", [n for n in PROVIDERS if has(n, "final_think_tags")])
@pytest.mark.parametrize("stream", [True, False])
def test_reasoning_in_think_tags_never_reaches_the_text(name: str, stream: bool):
    fake = fake_for(name)
    heard = Heard()
    try:
        reply = recorded(name, "final_think_tags")
        if not stream:  # the same answer whole, as a server without streaming sends it
            content = "<think>The listing answers it.</think>All done."
            reply.raw_body = json.dumps(
                {
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ]
                }
            ).encode()
            reply.headers = {"Content-Type": "application/json"}
        fake.script(reply)
        response = complete(fake, stream=stream, listener=heard)
    finally:
        fake.stop()
    assert response.message.text() == "All done."
    assert [(p.think, p.field) for p in response.message.content if isinstance(p, ThinkPart)] == [
        ("The listing answers it.", "think_tags")
    ]
    if stream:
        assert "".join(heard.texts) == "All done."


@pytest.mark.parametrize("name", PROVIDERS)
def test_an_answer_cut_by_the_output_limit_never_runs_a_truncated_call(name: str, tmp_path: Path):
    outcome, requests = turn(name, tmp_path, "length_cut", "final")
    if len(requests) == 1:  # cut mid-text (Ollama sends a cut call as text): said, not hidden
        assert outcome.answer is not None and outcome.answer.endswith(CUT_ANSWER_NOTE)
        return
    assert outcome.answer == "All done."
    [result] = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert "Not run: your message was cut off by the output limit" in result["content"]


@pytest.mark.parametrize("name", PROVIDERS)
def test_errors_end_as_the_loop_knows_them(name: str):
    expected = {
        "overflow": ContextOverflowError,
        "rate_limit": RetryableModelError,
        "quota": QuotaExhaustedError,
        "overloaded": RetryableModelError,  # Anthropic's 529
    }
    if name == "groq":  # its only documented quota is a daily rate limit: waiting does help
        expected["quota"] = RetryableModelError
    fake = fake_for(name)
    try:
        for answer, error in expected.items():
            if not has(name, answer):
                continue
            fake.script(recorded(name, answer))
            with pytest.raises(error):
                complete(fake)
    finally:
        fake.stop()


def test_an_error_openrouter_sends_in_the_middle_of_a_stream_is_retried_not_taken_as_the_answer():
    fake = fake_for("openrouter")
    try:
        fake.script(recorded("openrouter", "stream_error"))
        with pytest.raises(RetryableModelError) as raised:
            complete(fake)
    finally:
        fake.stop()
    assert raised.value.cause == "stream_error"


def test_a_conversation_keeps_one_prompt_cache_key_where_the_provider_documents_it(tmp_path: Path):
    """OpenAI routes requests of one `prompt_cache_key` to the same cache; every step of the turn
    sends the conversation's key. Other providers get no field they do not document."""
    assert takes_prompt_cache_key("https://api.openai.com/v1")
    assert not any(
        takes_prompt_cache_key(url)
        for url in ("https://api.moonshot.ai/v1", "https://api.deepseek.com", "http://localhost:11434/v1")
    )
    config = LoopConfig(cache_key="conversation-1")
    for sends_key in (True, False):
        _, requests = turn(
            "openai", tmp_path, "tool_calls", "final", config=config, prompt_cache_key=sends_key
        )
        sent = [body.get("prompt_cache_key") for body in requests]
        assert sent == (["conversation-1"] * 2 if sends_key else [None, None])
