"""Small text helpers for Slack's mrkdwn: escaping, shortening, code in sections."""

from __future__ import annotations

from typing import Any

SECTION_LIMIT = 3000  # Slack refuses a section whose text is longer
MAX_BLOCKS = 50  # Slack refuses a message with more blocks
# Slack's documented limits (50 blocks of up to 3,000 characters) are not all it enforces: it
# answers msg_blocks_too_long once a message's blocks hold about 13,000 characters in all.
MESSAGE_CHARS = 12_000
SUMMARY_LIMIT = 120  # tool arguments on a card or notice: enough to recognise the call
ELLIPSIS = "…"


def escape(text: str) -> str:
    """mrkdwn's three control characters; everything else is shown as written."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def shorten(text: str, limit: int = SUMMARY_LIMIT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + ELLIPSIS


def inline_code(text: str, limit: int = SUMMARY_LIMIT) -> str:
    """Text in backticks, which Slack cannot nest: a backtick inside becomes a similar quote."""
    return "`" + escape(shorten(text, limit).replace("`", "ˋ")) + "`" if text.strip() else ""


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_LIMIT]}}


def context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text[:SECTION_LIMIT]}]}


def code_blocks(body: str) -> list[dict[str, Any]]:
    """All of `body` as code sections, as many as it takes; the caller decides what fits a message."""
    fence_room = SECTION_LIMIT - len("```\n\n```")
    pieces = _escaped_pieces(body.replace("```", "ˋˋˋ"), fence_room)
    return [section(f"```\n{piece}\n```") for piece in pieces]


def block_chars(blocks: list[dict[str, Any]]) -> int:
    """The characters of text in `blocks`, which Slack counts against a message (MESSAGE_CHARS)."""
    return sum(_chars(block) + sum(_chars(e) for e in block.get("elements", [])) for block in blocks)


def _chars(item: dict[str, Any]) -> int:
    text = item.get("text")
    text = text.get("text") if isinstance(text, dict) else text
    return len(text) if isinstance(text, str) else 0


def code_sections(
    title: str, body: str, *, max_blocks: int = MAX_BLOCKS, max_chars: int = MESSAGE_CHARS
) -> list[dict[str, Any]]:
    """A title and as much of `body` as code as one message holds; a note says when it is cut."""
    note = context(f"{ELLIPSIS} cut: {len(body):,} characters in all.")
    pieces = code_blocks(body)
    blocks = [section(title)]
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        room_blocks = max_blocks - (0 if last else 1)
        room_chars = max_chars - (0 if last else block_chars([note]))
        if len(blocks) + 1 > room_blocks or block_chars([*blocks, piece]) > room_chars:
            return [*blocks, note]
        blocks.append(piece)
    return blocks


def _escaped_pieces(raw: str, room: int) -> list[str]:
    """Escape and cut into pieces of at most `room` characters, never inside an entity."""
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for char in raw:
        shown = escape(char)
        if size + len(shown) > room:
            pieces.append("".join(current))
            current, size = [], 0
        current.append(shown)
        size += len(shown)
    pieces.append("".join(current))
    return pieces
