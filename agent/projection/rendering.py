"""What the model sees of a message's content (context-core.md §2.4): tool results, blank text.

Both functions hand back the very list they were given when nothing changes, so the projector
can tell an untouched message (and reuse it) from one that needs a new wire form.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.messages import ContentPart, TextPart

TOOL_ERROR_STATUS = "<system>ERROR: Tool execution failed.</system>"
TOOL_EMPTY_STATUS = "<system>Tool output is empty.</system>"
TOOL_EMPTY_ERROR_STATUS = "<system>ERROR: Tool execution failed. Tool output is empty.</system>"
# Tools that produced nothing say so in these words; the model gets the status form instead.
EMPTY_OUTPUT_TEXT = "Tool output is empty."

_ERROR_PART = TextPart(text=TOOL_ERROR_STATUS)


def render_tool_result(
    output: str | Sequence[ContentPart], *, is_error: bool | None = None, note: str | None = None
) -> list[ContentPart]:
    """The model-visible content of a tool result: status text for errors and empty output, then the note."""
    parts: list[ContentPart] = [TextPart(text=output)] if isinstance(output, str) else list(output)
    return list(render_tool_content(parts, is_error, note))


def render_tool_content(
    content: list[ContentPart], is_error: bool | None, note: str | None
) -> list[ContentPart]:
    """`render_tool_result` over a tool message's content; returns `content` itself when unchanged."""
    rendered = _render_status(content, is_error is True)
    if not note:
        return rendered
    if len(rendered) == 1 and isinstance(rendered[0], TextPart):
        return [TextPart(text=f"{rendered[0].text}\n{note}")]
    return [*rendered, TextPart(text=note)]


def _render_status(content: list[ContentPart], is_error: bool) -> list[ContentPart]:
    if len(content) == 1 and isinstance(content[0], TextPart):
        return _render_text(content, content[0].text, is_error)
    if all(isinstance(part, TextPart) and _is_blank(part.text) for part in content):
        return [TextPart(text=TOOL_EMPTY_ERROR_STATUS if is_error else TOOL_EMPTY_STATUS)]
    if is_error:
        return [_ERROR_PART, *content]
    return content


def _render_text(content: list[ContentPart], text: str, is_error: bool) -> list[ContentPart]:
    if is_error:
        if not text:
            return [TextPart(text=TOOL_EMPTY_ERROR_STATUS)]
        return [TextPart(text=f"{TOOL_ERROR_STATUS}\n{text}")]
    stripped = text.strip()
    if not stripped or stripped == EMPTY_OUTPUT_TEXT:
        return [TextPart(text=TOOL_EMPTY_STATUS)]
    return content


def clean_content(content: list[ContentPart]) -> tuple[list[ContentPart], int]:
    """Drop blank text parts. Returns the kept parts (`content` itself if none were blank) and how many
    non-empty blank parts went, which the projector reports as `whitespace_text_dropped`."""
    for part in content:
        # `type() is`, not isinstance: pydantic's metaclass makes isinstance slow, and parts are
        # validated into exactly these classes.
        if type(part) is TextPart and not part.text.strip():
            break
    else:
        return content, 0
    kept: list[ContentPart] = []
    whitespace = 0
    for part in content:
        if type(part) is not TextPart or not _is_blank(part.text):
            kept.append(part)
        elif part.text:
            whitespace += 1
    return kept, whitespace


def _is_blank(text: str) -> bool:
    # Python's strip() and JavaScript's trim() differ only on rare control characters (U+001C-U+001F,
    # U+0085, U+FEFF); this project uses strip() everywhere (see messages.is_vacuous_part).
    return not text.strip()
