"""The projected form of one message, built once per message object and memoised on it.

A history is re-projected before every model call, and almost every message projects the same
way each time, so its cleaned wire form, its block kind and its call ids are computed on first
sight and kept in the message's memo. Building a pydantic Message costs microseconds, so a message
that needs no change is its own wire form, and a stripped copy is assembled without re-validation
(`wire_message`): every value in it comes from an already-validated message.
"""

from __future__ import annotations

from functools import lru_cache
from sys import intern
from typing import Any

from agent.messages import ContentPart, Message, TextPart, is_vacuous_part
from agent.projection.rendering import clean_content, render_tool_content

TOOL_RESULT_UNAVAILABLE = (
    "Tool result is not available in the current context. Do not assume the tool completed successfully."
)
EMPTY_TOOL_RESULT_ERROR = "Tool result message content cannot be empty after removing empty text blocks."

# The keys a projected message keeps; the context-only ones are cleared.
WIRE_FIELDS = frozenset({"role", "name", "content", "tool_calls", "tool_call_id", "partial", "tools"})
CONTEXT_FIELDS = frozenset({"id", "provider_message_id", "origin", "is_error", "note"})
_CLEARED = dict.fromkeys(CONTEXT_FIELDS)

# Block kinds of the pairing pass (context-core.md §2.2 steps 1-6).
DROP = 0  # no content left: dropped silently
VACUOUS = 1  # only vacuous parts: dropped with an anomaly
PLAIN = 2
MERGEABLE = 3  # a real user's message: consecutive ones become one (context-core.md §2.3)
EXCHANGE = 4  # carries tool calls
TOOL = 5  # a tool result; in sizing mode it takes its `sizing_kind` instead
PARTIAL = 6  # skipped entirely, calls included

MEMO_KEY = "projected"

# Everything the pairing pass needs, so it reads one memo entry per message and no field:
# (kind, wire form, whitespace parts dropped, call ids, tool_call_id, role, sizing_kind). The wire
# form is None when the message is dropped or is its own wire form: a record holding its own
# message would make every message a reference cycle, freed only by the cyclic collector.
Projected = tuple[int, Message | None, int, tuple[str, ...], str | None, str, int]
_PARTIAL: Projected = (PARTIAL, None, 0, (), None, "", PARTIAL)


class ProjectionError(ValueError):
    """A tool result would reach the provider with no content (REQUEST_INVALID in the reference)."""

    code = "REQUEST_INVALID"

    def __init__(self, tool_call_id: str | None) -> None:
        super().__init__(EMPTY_TOOL_RESULT_ERROR)
        self.tool_call_id = tool_call_id


def memo_of(message: Message) -> dict[str, Any]:
    """`message.memo()` without pydantic's private-attribute lookup, which costs microseconds.

    Same dict as `Message.memo()`: pydantic keeps `_memo` in `__pydantic_private__`.
    """
    private = message.__pydantic_private__
    assert private is not None  # pydantic sets it on every model with a private attribute
    memo: dict[str, Any] | None = private["_memo"]
    if memo is None:
        memo = private["_memo"] = {}
    return memo


def projected(message: Message) -> Projected:
    memo = memo_of(message)
    record = memo.get(MEMO_KEY)
    if record is None:
        record = memo[MEMO_KEY] = _project_message(message)
    return record


def _project_message(message: Message) -> Projected:
    # A dozen field reads: through the field dict they skip pydantic's __getattr__ hook, which
    # makes an attribute read about three times slower than on a plain object.
    fields = message.__dict__
    if fields["partial"] is True:
        return _PARTIAL
    role = fields["role"]
    content = fields["content"]
    if role == "tool":
        content = render_tool_content(content, fields["is_error"], fields["note"])
    cleaned, whitespace = clean_content(content)
    if role == "tool" and not cleaned:  # unreachable: rendering always leaves a part
        raise ProjectionError(fields["tool_call_id"])
    block_kind = _block_kind(fields, cleaned)
    kind = TOOL if role == "tool" else block_kind
    wire = None
    if kind > VACUOUS and (cleaned is not fields["content"] or _has_context_fields(fields)):
        wire = wire_message(message, cleaned)
    # Interned ids: a result's lookup of its call then matches by identity, hash already cached.
    call_ids = tuple(intern(call.id) for call in fields["tool_calls"])
    call_id = fields["tool_call_id"]
    return kind, wire, whitespace, call_ids, None if call_id is None else intern(call_id), role, block_kind


def _block_kind(fields: dict[str, Any], cleaned: list[ContentPart]) -> int:
    if fields["tool_calls"]:
        return EXCHANGE
    if not fields["tools"]:
        if not cleaned:
            return DROP
        if all(is_vacuous_part(part) for part in cleaned):
            return VACUOUS
    origin = fields["origin"]
    if fields["role"] == "user" and origin is not None and origin.kind == "user":
        return MERGEABLE
    return PLAIN


def _has_context_fields(fields: dict[str, Any]) -> bool:
    return not (
        fields["id"] is None
        and fields["origin"] is None
        and fields["is_error"] is None
        and fields["note"] is None
        and fields["provider_message_id"] is None
    )


_new_message = Message.__new__
_set = object.__setattr__


def wire_message(source: Message, content: list[ContentPart]) -> Message:
    """`source` with `content` and without its context-only fields, assembled without validation.

    Does what `Message.model_construct` does, minus its per-field Python loop (which costs more than
    validating); tests pin that the result equals, dumps and copies like a validated message.
    """
    fields = {**source.__dict__, **_CLEARED, "content": content}
    message = _new_message(Message)
    _set(message, "__dict__", fields)
    _set(message, "__pydantic_fields_set__", source.__pydantic_fields_set__ & WIRE_FIELDS)
    _set(message, "__pydantic_extra__", None)
    _set(message, "__pydantic_private__", {"_memo": None})
    return message


@lru_cache(maxsize=4096)  # shared frozen placeholders; a bound keeps a long-lived worker's cache small
def unavailable_result(tool_call_id: str) -> Message:
    """The placeholder result of a call whose result is missing (context-core.md §2.3), exact text."""
    return Message(role="tool", content=[TextPart(text=TOOL_RESULT_UNAVAILABLE)], tool_call_id=tool_call_id)


def is_unavailable_result(message: Message) -> bool:
    if message.role != "tool" or not message.content:
        return False
    first = message.content[0]
    return isinstance(first, TextPart) and first.text == TOOL_RESULT_UNAVAILABLE


def merged_user_message(run: list[Message]) -> Message:
    """Consecutive real-user messages as one (context-core.md §2.3), memoised on the first of the run.

    The key leaves the first message out: the memo is its own, and holding it would be a cycle.
    """
    memo = memo_of(run[0])
    key = tuple(run[1:])
    cached: tuple[tuple[Message, ...], Message] | None = memo.get("merged")
    if cached is not None and cached[0] == key:
        return cached[1]
    texts: list[str] = []
    others: list[ContentPart] = []
    for message in run:
        text = "".join(part.text for part in message.content if isinstance(part, TextPart))
        if text:
            texts.append(text)
        others.extend(part for part in message.content if not isinstance(part, TextPart))
    joined = "\n\n".join(texts)
    content: list[ContentPart] = [TextPart(text=joined)] if joined else []
    merged = Message(role="user", content=[*content, *others])
    memo["merged"] = (key, merged)
    return merged
