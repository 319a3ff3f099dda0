"""Split a Markdown answer into messages Slack accepts, on paragraph and code-fence boundaries.

A chunk never ends inside a fenced code block: a paragraph or fence that fits goes whole into
one chunk; a fence longer than a chunk is cut between lines and each piece is closed and
reopened with the same fence line, so every chunk renders on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Segment:
    text: str
    fence: str | None = None  # the opening fence line of a code block


def split_markdown(text: str, limit: int) -> list[str]:
    """Chunks of at most `limit` characters that together say all of `text`."""
    if limit < 16:
        raise ValueError("a chunk needs room for a fence and some text")
    chunks: list[str] = []
    current = ""
    for segment in segments(text):
        for piece in _fitted(segment, limit):
            joined = f"{current}\n\n{piece}" if current else piece
            if len(joined) <= limit:
                current = joined
                continue
            chunks.append(current)
            current = piece
    if current:
        chunks.append(current)
    return chunks


def segments(text: str) -> list[Segment]:
    """Paragraphs (separated by blank lines) and whole fenced code blocks, in order."""
    found: list[Segment] = []
    paragraph: list[str] = []
    fence: list[str] = []
    marker = ""
    for line in text.replace("\r\n", "\n").split("\n"):
        if fence:
            fence.append(line)
            if _closes(line, marker):
                found.append(Segment("\n".join(fence), fence[0]))
                fence = []
            continue
        opening = _FENCE.match(line)
        if opening:
            _flush(paragraph, found)
            fence, marker = [line], opening.group(1)
        elif line.strip():
            paragraph.append(line)
        else:
            _flush(paragraph, found)
    _flush(paragraph, found)
    if fence:  # an unclosed fence runs to the end, as Slack renders it; close it explicitly
        found.append(Segment("\n".join([*fence, marker]), fence[0]))
    return found


def _closes(line: str, marker: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(marker) and set(stripped) == {marker[0]}


def _flush(paragraph: list[str], found: list[Segment]) -> None:
    if paragraph:
        found.append(Segment("\n".join(paragraph)))
        paragraph.clear()


def _fitted(segment: Segment, limit: int) -> list[str]:
    if len(segment.text) <= limit:
        return [segment.text]
    if segment.fence is None:
        return _cut_lines(segment.text.split("\n"), limit, "\n")
    opening = segment.fence
    closing = _FENCE.match(opening).group(1)  # type: ignore[union-attr]  # fence is a line _FENCE matched
    body = segment.text.split("\n")[1:-1]
    room = limit - len(opening) - len(closing) - 2
    return [f"{opening}\n{piece}\n{closing}" for piece in _cut_lines(body, room, "\n")]


def _cut_lines(lines: list[str], limit: int, joiner: str) -> list[str]:
    """Group lines into pieces of at most `limit`; a line longer than that is cut at spaces."""
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        for part in _cut_long(line, limit):
            extra = len(part) + (len(joiner) if current else 0)
            if current and size + extra > limit:
                pieces.append(joiner.join(current))
                current, size = [], 0
                extra = len(part)
            current.append(part)
            size += extra
    if current:
        pieces.append(joiner.join(current))
    return pieces


def _cut_long(line: str, limit: int) -> list[str]:
    parts: list[str] = []
    while len(line) > limit:
        cut = line.rfind(" ", limit // 2, limit)
        cut = cut if cut > 0 else limit
        parts.append(line[:cut])
        line = line[cut:].lstrip(" ") if cut < limit else line[cut:]
    parts.append(line)
    return parts
