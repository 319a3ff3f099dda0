"""Tool output: coercing what a tool returned, normalising it, accumulating streamed text.

`coerce_tool_result` and `normalize_tool_result` are the executor's context-core.md §4.3 rules: every
return value becomes a well-formed result (or the exact error text saying why not), empty
output says so, media-only output gets a leading text, a text-only list becomes one string.
`ToolOutputAccumulator` is the newer 4.6 contract for tools that stream text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from agent.messages import (
    MEDIA_PART_TYPES,
    AudioURLPart,
    ContentPart,
    ImageURLPart,
    TextPart,
    ThinkPart,
    VideoURLPart,
)
from agent.tools import texts
from agent.tools.base import ToolResult, ToolResultSpill
from agent.tools.defaults import (
    LINE_TRUNCATION_MARKER,
    MAX_LINE_CHARS,
    TOOL_RESULT_MAX_CHARS,
    TOOL_RESULT_MAX_RETAINED_CHARS,
)

_PARTS = TypeAdapter(list[ContentPart])
_RESULT_FIELDS = ("is_error", "note", "truncated", "spill", "spill_exempt", "stop_turn")


def _js_type(value: Any) -> str:
    """The JavaScript `typeof` name the reference's message uses for a non-object return."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


_PART_TYPES = (TextPart, ThinkPart, ImageURLPart, AudioURLPart, VideoURLPart)


def _parts(output: list[Any]) -> list[ContentPart] | None:
    if all(isinstance(part, _PART_TYPES) for part in output):
        return output
    try:
        return _PARTS.validate_python(output)
    except ValidationError:
        return None


def _from_mapping(name: str, value: Mapping[str, Any]) -> ToolResult:
    output = value.get("output")
    if isinstance(output, list):
        output = _parts(output)
    if not isinstance(output, str | list):
        return ToolResult(texts.malformed_output(name), is_error=True)
    fields = {key: value[key] for key in _RESULT_FIELDS if key in value}
    fields["is_error"] = bool(fields.get("is_error"))
    fields["truncated"] = fields.get("truncated") is True
    if isinstance(fields.get("spill"), Mapping):
        fields["spill"] = ToolResultSpill(**fields["spill"])
    return ToolResult(output, **fields)


def coerce_tool_result(name: str, value: Any) -> ToolResult:
    """Whatever `run` returned, as a ToolResult (context-core.md §4.3's texts for the malformed cases)."""
    if isinstance(value, ToolResult):
        if isinstance(value.output, str):
            return value
        parts = _parts(value.output) if isinstance(value.output, list) else None
        if parts is None:
            return ToolResult(texts.malformed_output(name), is_error=True)
        return value if parts is value.output else value.with_changes(output=parts)
    if value is None:
        return ToolResult(texts.returned_nothing(name), is_error=True)
    if isinstance(value, Mapping):
        return _from_mapping(name, value)
    if isinstance(value, list | tuple):  # an object in JavaScript terms, but with no output field
        return ToolResult(texts.malformed_output(name), is_error=True)
    return ToolResult(texts.returned_wrong_type(name, _js_type(value)), is_error=True)


def failure_result(name: str, error: BaseException) -> ToolResult:
    message = str(error) or type(error).__name__
    return ToolResult(texts.failed(name, message), is_error=True)


def _is_media(part: ContentPart) -> bool:
    return part.type in MEDIA_PART_TYPES


def normalize_tool_result(result: ToolResult) -> ToolResult:
    """Empty → "Tool output is empty."; media without text gets a leading text; text lists joined."""
    output = result.output
    changes: dict[str, Any] = {}
    if result.note is not None and not result.note:
        changes["note"] = None
    if isinstance(output, str):
        if not output:
            changes["output"] = texts.TOOL_OUTPUT_EMPTY
    elif not output:
        changes["output"] = texts.TOOL_OUTPUT_EMPTY
    elif any(_is_media(part) for part in output):
        if not any(isinstance(part, TextPart) and part.text for part in output):
            changes["output"] = [TextPart(text=texts.NON_TEXT_CONTENT), *output]
    elif all(isinstance(part, TextPart) for part in output):
        changes["output"] = "".join(part.text for part in output if isinstance(part, TextPart))
    return result.with_changes(**changes) if changes else result


def cut_long_lines(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """Every line longer than `limit` is cut so that, with the marker, it is `limit` chars long."""
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    keep = max(limit - len(LINE_TRUNCATION_MARKER), 0)
    changed = False
    for index, line in enumerate(lines):
        if len(line) > limit:
            lines[index] = line[:keep] + LINE_TRUNCATION_MARKER
            changed = True
    return "\n".join(lines) if changed else text


class ToolOutputAccumulator:
    """Collects streamed text, keeping at most 10,000,000 chars but counting all of them."""

    def __init__(self, max_retained_chars: int = TOOL_RESULT_MAX_RETAINED_CHARS) -> None:
        self._buffer: list[str] = []
        self._max_retained = max_retained_chars
        self._retained = 0
        self._total = 0

    @property
    def n_chars(self) -> int:
        return self._retained

    @property
    def total_chars(self) -> int:
        return self._total

    def write(self, text: str) -> None:
        self._total += len(text)
        room = self._max_retained - self._retained
        if room <= 0:
            return
        kept = text if len(text) <= room else text[:room]
        self._buffer.append(kept)
        self._retained += len(kept)

    def text(self) -> str:
        return "".join(self._buffer)

    def ok(self, message: str = "") -> ToolResult:
        """The buffer, or the message (ending with ".") when nothing was written."""
        if message and not message.endswith("."):
            message += "."
        output = self.text()
        return ToolResult(output or message, spill=self._completion_spill(message))

    def error(self, message: str) -> ToolResult:
        """The buffer with the message on a line of its own after it."""
        output = self.text()
        if not message:
            text = output
        elif not output:
            text = message
        else:
            text = f"{output}{message}" if output.endswith("\n") else f"{output}\n{message}"
        return ToolResult(text, is_error=True, spill=self._retention_spill(message))

    def _retention_spill(self, suffix: str = "") -> ToolResultSpill | None:
        if self._total <= self._retained:
            return None
        return ToolResultSpill(total_chars=self._total, suffix=suffix or None)

    def _completion_spill(self, suffix: str) -> ToolResultSpill | None:
        capped = self._retention_spill(suffix)
        if capped is not None:
            return capped
        if not suffix or self._total <= TOOL_RESULT_MAX_CHARS:
            return None
        return ToolResultSpill(suffix=suffix)
