"""Messages ↔ the OpenAI chat-completions JSON shape (what Kimi and friends accept).

Reasoning (kept as think parts, with the field it came in: `reasoning_content`, `reasoning`,
OpenRouter's `reasoning_details`, or `<think>` tags in the text) goes back to the provider the
way it came: DeepSeek's and Kimi's thinking modes answer 400 when an assistant message with
tool calls lacks `reasoning_content`, in every later request, and accept it empty; details go
back unmodified; `<think>` reasoning is not sent. The reasoning of an answer without tool calls
is ignored after the next user message, so it is only sent within its turn. Once the latest
reasoning of a request came as `reasoning_content`, every assistant tool-call message carries
that field (empty when it has none: a step from before thinking was switched on).
"""

from __future__ import annotations

from typing import Any

from agent.messages import (
    AudioURLPart,
    ContentPart,
    ImageURLPart,
    Message,
    ReasoningField,
    TextPart,
    ThinkPart,
    ToolCall,
    VideoURLPart,
)
from agent.model._think_tags import split_think_tags

EMPTY_ARGUMENTS = "{}"  # providers require a string; a call the model sent without arguments
# In place of an image, for a model that cannot see one (it refuses the whole request otherwise).
IMAGE_WITHHELD = "\n[an image was here; this model cannot see images, so it is left out]"


def to_openai_messages(
    messages: list[Message], system: str | None = None, *, vision: bool = True
) -> list[dict[str, Any]]:
    """`vision=False`: images already in the history (shared while the model could see them)
    go as a note saying so, so the conversation goes on."""
    wire = [{"role": "system", "content": system}] if system else []
    thinks = {index: _think(m) for index, m in enumerate(messages) if m.role == "assistant"}
    reasoned = [field for reasoning, field, _ in thinks.values() if reasoning is not None]
    thinking = bool(reasoned) and reasoned[-1] == "reasoning_content"
    turn_start = max((i for i, message in enumerate(messages) if message.role == "user"), default=-1)
    for index, message in enumerate(messages):
        if message.role == "assistant":
            wire.append(_assistant(message, thinks[index], thinking=thinking, in_turn=index > turn_start))
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


Reasoning = tuple[
    str | None, ReasoningField, list[dict[str, Any]]
]  # the text (None: none sent), its field, details


def _assistant(message: Message, think: Reasoning, *, thinking: bool, in_turn: bool) -> dict[str, Any]:
    text = "".join(part.text for part in message.content if isinstance(part, TextPart))
    entry: dict[str, Any] = {"role": "assistant", "content": text or None}
    reasoning, field, details = think
    if message.tool_calls and thinking and reasoning is None:
        reasoning = ""
    if message.tool_calls or in_turn:
        entry.update(_reasoning_back(reasoning, field, details))
    if message.tool_calls:
        entry["tool_calls"] = [_tool_call(call) for call in message.tool_calls]
    return entry


def _think(message: Message) -> Reasoning:
    """The message's reasoning (possibly empty; None when the model sent none), the field it
    came in, and OpenRouter's details of it."""
    thinks = [part for part in message.content if isinstance(part, ThinkPart)]
    if not thinks:
        return None, "reasoning_content", []
    details = [detail for part in thinks for detail in part.details or []]
    return "".join(part.think for part in thinks), thinks[0].field or "reasoning_content", details


def _reasoning_back(
    reasoning: str | None, field: ReasoningField, details: list[dict[str, Any]]
) -> dict[str, Any]:
    """Reasoning as the provider that wrote it takes it back: OpenRouter's details unmodified,
    else in the field it came in; reasoning written in <think> tags is not sent (those models'
    templates drop it)."""
    if details:
        return {"reasoning_details": details}
    if reasoning is None or field == "think_tags":
        return {}
    return {field: reasoning}


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
    text = choice_message.get("content")
    tagged, text = split_think_tags(text) if isinstance(text, str) else (None, "")
    name, reasoning = reasoning_in(choice_message)
    details = [d for d in choice_message.get("reasoning_details") or [] if isinstance(d, dict)]
    think = think_part(reasoning if name else None, name, details, tagged)
    if think is not None:
        content.append(think)
    if text:
        content.append(TextPart(text=text))
    calls = [
        ToolCall(id=call["id"], name=call["function"]["name"], arguments=call["function"].get("arguments"))
        for call in choice_message.get("tool_calls") or []
    ]
    return Message(role="assistant", content=content, tool_calls=calls)


def reasoning_in(message: dict[str, Any]) -> tuple[ReasoningField | None, str]:
    """The reasoning a message or delta carries and its field: `reasoning_content` (Kimi,
    DeepSeek, older vLLM) or `reasoning` (vLLM, Ollama, OpenRouter, Groq); one that sends both
    sends the same text twice."""
    for name in ("reasoning_content", "reasoning"):
        value = message.get(name)
        if isinstance(value, str):
            return name, value
    return None, ""


def think_part(
    reasoning: str | None, field: ReasoningField | None, details: list[dict[str, Any]], tagged: str | None
) -> ThinkPart | None:
    """The answer's reasoning, from whichever of the provider's forms it came in; kept even when
    empty, since thinking providers want it back (`_assistant`)."""
    if reasoning is None and tagged is not None:
        reasoning, field = tagged, "think_tags"
    if reasoning is None and details:
        reasoning = "".join(str(d.get("text") or d.get("summary") or "") for d in details)
    if reasoning is None:
        return None
    return ThinkPart(think=reasoning, field=field, details=details or None)
