"""Assemble a streamed chat completion (server-sent events) into one assistant message.

Tool calls arrive as deltas keyed by `index`: the first delta of an index carries the id and
name, later ones append argument text. A call is complete when a later index starts or the
stream finishes; the listener hears of each complete call exactly once, in order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agent.messages import ContentPart, Message, ReasoningField, TextPart, ToolCall
from agent.model._openai_format import reasoning_in, think_part
from agent.model._think_tags import ThinkTags
from agent.model._usage import usage_in_chunk
from agent.model.base import ModelResponse, StreamListener, Usage
from agent.model.errors import MalformedResponseError, RetryableModelError
from agent.redaction import error_codes

DONE = "[DONE]"


@dataclass
class _CallDraft:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def call(self) -> ToolCall:
        return ToolCall(id=self.id, name=self.name, arguments="".join(self.arguments))


@dataclass
class StreamAssembler:
    listener: StreamListener | None = None
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    reasoning_field: ReasoningField | None = None  # where the model sent reasoning, even only empty strings
    details: dict[int, dict[str, Any]] = field(default_factory=dict)  # OpenRouter's, by index
    tags: ThinkTags = field(default_factory=ThinkTags)
    drafts: dict[int, _CallDraft] = field(default_factory=dict)
    announced: int = 0
    finish_reason: str | None = None
    usage: Usage | None = None
    done: bool = False

    def feed_line(self, line: str) -> None:
        if not line.startswith("data:"):
            return  # comments, event names and keep-alives carry nothing for us
        data = line.removeprefix("data:").strip()
        if data == DONE:
            self.done = True
            return
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError) as error:  # RecursionError: nested deeper than the stack
            # the chunk's text is not shown: it may be anything the endpoint sent
            raise MalformedResponseError(f"malformed stream chunk ({len(data)} characters)") from error
        self._feed_chunk(chunk)

    def _feed_chunk(self, chunk: dict[str, Any]) -> None:
        if "error" in chunk:
            codes = ", ".join(error_codes(chunk)) or "no error code"
            raise RetryableModelError(f"the stream reported an error ({codes})", cause="stream_error")
        self.usage = usage_in_chunk(chunk) or self.usage
        for choice in chunk.get("choices") or []:
            self._feed_delta(choice.get("delta") or {})
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

    def _feed_delta(self, delta: dict[str, Any]) -> None:
        if isinstance(delta.get("content"), str):
            self._feed_text(self.tags.feed(delta["content"]))
        name, reasoning = reasoning_in(delta)
        if name is not None:
            self.reasoning_field = self.reasoning_field or name
            self.reasoning.append(reasoning)
        for item in delta.get("reasoning_details") or []:
            _merge_detail(self.details, item)
        for item in delta.get("tool_calls") or []:
            self._feed_call(item)

    def _feed_text(self, text: str) -> None:
        if text:
            self.text.append(text)
            if self.listener is not None:
                self.listener.on_text(text)

    def _feed_call(self, item: dict[str, Any]) -> None:
        index = item.get("index", len(self.drafts))
        if index not in self.drafts:
            self._announce_up_to(index)
            self.drafts[index] = _CallDraft()
        draft = self.drafts[index]
        draft.id = item.get("id") or draft.id
        function = item.get("function") or {}
        draft.name = function.get("name") or draft.name
        if function.get("arguments"):
            draft.arguments.append(function["arguments"])

    def _announce_up_to(self, index: int) -> None:
        """Every draft before `index` is complete: a later call has started."""
        for position in sorted(self.drafts):
            if position < index and position >= self.announced:
                self._announce(position)

    def _announce(self, position: int) -> None:
        self.announced = position + 1
        if self.listener is not None:
            self.listener.on_tool_call(self.drafts[position].call())

    def finish(self) -> ModelResponse:
        if not self.done and self.finish_reason is None:
            raise RetryableModelError("the model's stream was cut before it finished", cause="stream_cut")
        self._feed_text(self.tags.finish())
        for position in sorted(self.drafts):
            if position >= self.announced:
                self._announce(position)
        calls = [self.drafts[position].call() for position in sorted(self.drafts)]
        if any(not call.id or not call.name for call in calls):
            raise MalformedResponseError("a streamed tool call came without an id or a name")
        return ModelResponse(message=self._message(calls), finish_reason=self.finish_reason, usage=self.usage)

    def _message(self, calls: list[ToolCall]) -> Message:
        content: list[ContentPart] = []
        think = think_part(
            "".join(self.reasoning) if self.reasoning_field else None,
            self.reasoning_field,
            [self.details[index] for index in sorted(self.details)],
            "".join(self.tags.reasoning) if self.tags.found else None,
        )
        if think is not None:
            content.append(think)
        if self.text:
            content.append(TextPart(text="".join(self.text)))
        return Message(role="assistant", content=content, tool_calls=calls)


def _merge_detail(details: dict[int, dict[str, Any]], item: Any) -> None:
    """A streamed `reasoning_details` entry: pieces of one index make one entry, their texts
    joined and the last signature kept."""
    if not isinstance(item, dict):
        return
    index = item.get("index", len(details))
    merged = details.setdefault(index, {})
    for key, value in item.items():
        if key in ("text", "summary", "data") and isinstance(value, str):
            merged[key] = merged.get(key, "") + value
        elif value is not None or key not in merged:
            merged[key] = value
