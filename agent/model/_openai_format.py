"""Messages ↔ the OpenAI chat-completions JSON shape (what Kimi and friends accept).

Reasoning (`reasoning_content`, kept as think parts) goes back to the provider the way thinking
providers ask: DeepSeek's thinking mode answers 400 when an assistant message with tool calls
lacks it, in every later request, and accepts it empty; the reasoning of an answer without tool
calls is ignored after the next user message, so it is only sent within its turn. Once any
assistant message of a request carries reasoning, the conversation is with a thinking model,
and every assistant tool-call message carries the field (empty when it has none: a step from
before thinking was switched on).
"""

from __future__ import annotations

from typing import Any

from agent.messages import (
    AudioURLPart,
    ContentPart,
    ImageURLPart,
    Message,
    TextPart,
    ThinkPart,
    ToolCall,
    VideoURLPart,
)

EMPTY_ARGUMENTS = "{}"  # providers require a string; a call the model sent without arguments
# In place of an image, for a model that cannot see one (it refuses the whole request otherwise).
IMAGE_WITHHELD = "\n[an image was here; this model cannot see images, so it is left out]"


def to_openai_messages(
    messages: list[Message], system: str | None = None, *, vision: bool = True
) -> list[dict[str, Any]]:
    """`vision=False`: images already in the history (shared while the model could see them)
    go as a note saying so, so the conversation goes on."""
    wire = [{"role": "system", "content": system}] if system else []
    thinking = any(_reasoning(message) is not None for message in messages if message.role == "assistant")
    turn_start = max((i for i, message in enumerate(messages) if message.role == "user"), default=-1)
    for index, message in enumerate(messages):
        if message.role == "assistant":
            wire.append(_assistant(message, thinking=thinking, in_turn=index > turn_start))
        else:
            wire.append(_to_openai(message, vision))
    return wire


def _to_openai(message: Message, vision: bool) -> dict[str, Any]:
    parts = message.content if vision else [_seeable(part) for part in message.content]
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": _content(parts)}
    entry: dict[str, Any] = {"role": message.role, "content": _content(parts)}
    if message.name:
        entry["name"] = message.name
    return entry


def _assistant(message: Message, *, thinking: bool = False, in_turn: bool = True) -> dict[str, Any]:
    text = "".join(part.text for part in message.content if isinstance(part, TextPart))
    entry: dict[str, Any] = {"role": "assistant", "content": text or None}
    reasoning = _reasoning(message)
    if message.tool_calls and thinking and reasoning is None:
        reasoning = ""
    if not message.tool_calls and not in_turn:
        reasoning = None
    if reasoning is not None:
        entry["reasoning_content"] = reasoning
    if message.tool_calls:
        entry["tool_calls"] = [_tool_call(call) for call in message.tool_calls]
    return entry


def _reasoning(message: Message) -> str | None:
    """The message's reasoning (possibly empty), or None when the model sent none."""
    thinks = [part.think for part in message.content if isinstance(part, ThinkPart)]
    return "".join(thinks) if thinks else None


def _tool_call(call: ToolCall) -> dict[str, Any]:
    arguments = call.arguments if call.arguments is not None else EMPTY_ARGUMENTS
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}


def _seeable(part: ContentPart) -> ContentPart:
    return TextPart(text=IMAGE_WITHHELD) if isinstance(part, ImageURLPart) else part


def _content(parts: list[ContentPart]) -> str | list[dict[str, Any]]:
    if all(isinstance(part, TextPart) for part in parts):
        return "".join(part.text for part in parts if isinstance(part, TextPart))
    return [wire for part in parts if (wire := _part(part)) is not None]


def _part(part: ContentPart) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImageURLPart):
        return {"type": "image_url", "image_url": {"url": part.image_url.url}}
    if isinstance(part, AudioURLPart):
        return {"type": "input_audio", "input_audio": {"url": part.audio_url.url}}
    if isinstance(part, VideoURLPart):
        return {"type": "video_url", "video_url": {"url": part.video_url.url}}
    return None  # think parts travel as reasoning_content on the assistant message


def from_openai_message(choice_message: dict[str, Any]) -> Message:
    """An assistant message from a completion's `choices[0].message`."""
    content: list[ContentPart] = []
    reasoning = choice_message.get("reasoning_content")
    if isinstance(reasoning, str):  # kept even when empty: thinking providers want it back
        content.append(ThinkPart(think=reasoning))
    text = choice_message.get("content")
    if isinstance(text, str) and text:
        content.append(TextPart(text=text))
    calls = [
        ToolCall(id=call["id"], name=call["function"]["name"], arguments=call["function"].get("arguments"))
        for call in choice_message.get("tool_calls") or []
    ]
    return Message(role="assistant", content=content, tool_calls=calls)
