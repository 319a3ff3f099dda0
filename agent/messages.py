"""The shared vocabulary: messages, content parts and tool calls (context-core.md §1).

Every model is frozen: history is shared between projections, caches and the loop, so a
message is never changed in place; code that needs a different message builds a new one
(`model_copy(update=...)`). JSON keys are snake_case, on the wire and in Redis.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

Role = Literal["system", "user", "assistant", "tool"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class TextPart(_Frozen):
    type: Literal["text"] = "text"
    text: str


ReasoningField = Literal["reasoning_content", "reasoning", "think_tags"]


class ThinkPart(_Frozen):
    """The model's reasoning. `field` is where the provider put it, so it goes back the same way
    (None: `reasoning_content`, as recorded before providers were told apart); `details` are
    OpenRouter's `reasoning_details`, which go back unmodified."""

    type: Literal["think"] = "think"
    think: str
    encrypted: str | None = None
    field: ReasoningField | None = None
    details: list[dict[str, Any]] | None = None


class MediaURL(_Frozen):
    url: str
    id: str | None = None


class ImageURLPart(_Frozen):
    type: Literal["image_url"] = "image_url"
    image_url: MediaURL


class AudioURLPart(_Frozen):
    type: Literal["audio_url"] = "audio_url"
    audio_url: MediaURL


class VideoURLPart(_Frozen):
    type: Literal["video_url"] = "video_url"
    video_url: MediaURL


ContentPart = Annotated[
    TextPart | ThinkPart | ImageURLPart | AudioURLPart | VideoURLPart,
    Field(discriminator="type"),
]
MEDIA_PART_TYPES = frozenset({"image_url", "audio_url", "video_url"})


class ToolCall(_Frozen):
    """A call as the model made it. `arguments` is the raw JSON string, or None."""

    type: Literal["function"] = "function"
    id: str
    name: str
    arguments: str | None = None
    extras: dict[str, Any] | None = None


class Origin(_Frozen):
    """Where a user-role message came from (`kind`), plus kind-specific fields."""

    model_config = ConfigDict(frozen=True, extra="allow")

    kind: str
    trigger: str | None = None
    variant: str | None = None


class Message(_Frozen):
    """A context message: the wire fields plus the context-only ones (id, origin, ...).

    Projection strips the context-only fields; `id` is the Redis stream id of the wire
    entry that created the message, which is what makes a message identifiable after a
    reload from Redis.
    """

    role: Role
    name: str | None = None
    content: list[ContentPart] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    partial: bool | None = None
    tools: list[dict[str, Any]] | None = None
    id: str | None = None
    provider_message_id: str | None = None
    origin: Origin | None = None
    is_error: bool | None = None
    note: str | None = None

    # Derived values (token estimate, projected form) memoised per object. Safe because the
    # model is frozen; a copy with changes starts with an empty memo.
    _memo: dict[str, Any] | None = PrivateAttr(default=None)

    def memo(self) -> dict[str, Any]:
        # Reading a private attribute goes through BaseModel.__getattr__ (~7 µs); the private
        # dict itself is a plain attribute.
        private = self.__pydantic_private__
        assert private is not None  # pydantic sets it on every model with a private attribute
        memo: dict[str, Any] | None = private["_memo"]
        if memo is None:
            memo = private["_memo"] = {}
        return memo

    def __eq__(self, other: object) -> bool:
        # Compare fields only: the memo is a cache, not part of the value.
        return isinstance(other, Message) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # contains lists; compare by value, key by id()

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Message:
        copy = super().model_copy(update=update, deep=deep)
        if update and copy.__pydantic_private__ is not None:
            copy.__pydantic_private__["_memo"] = None
        return copy

    def text(self) -> str:
        """The concatenated text of the text parts."""
        return "".join(part.text for part in self.content if isinstance(part, TextPart))


USER_ORIGIN = Origin(kind="user")


def user_message(text: str, *, origin: Origin | None = USER_ORIGIN, id: str | None = None) -> Message:
    return Message(role="user", content=[TextPart(text=text)], origin=origin, id=id)


def assistant_message(text: str = "", tool_calls: list[ToolCall] | None = None) -> Message:
    content: list[ContentPart] = [TextPart(text=text)] if text else []
    return Message(role="assistant", content=content, tool_calls=tool_calls or [])


def tool_message(
    tool_call_id: str, text: str, *, is_error: bool | None = None, note: str | None = None
) -> Message:
    return Message(
        role="tool", content=[TextPart(text=text)], tool_call_id=tool_call_id, is_error=is_error, note=note
    )


def is_vacuous_part(part: ContentPart) -> bool:
    """Blank text, or blank think without an encrypted signature. Media is never vacuous."""
    if isinstance(part, TextPart):
        return not part.text.strip()
    if isinstance(part, ThinkPart):
        return not part.think.strip() and not part.encrypted
    return False


REAL_USER_TRIGGERED_KINDS = frozenset({"skill_activation", "plugin_command"})


def is_real_user_input(message: Message) -> bool:
    """A user message a person typed (or a user-slash skill/command), not a system injection."""
    if message.role != "user":
        return False
    origin = message.origin
    if origin is None or origin.kind == "user":
        return True
    return origin.kind in REAL_USER_TRIGGERED_KINDS and origin.trigger == "user-slash"
