"""Small text helpers for Slack's mrkdwn: escaping, shortening, code in sections."""

from __future__ import annotations

from typing import Any

SECTION_LIMIT = 3000  # Slack refuses a section whose text is longer
MAX_BLOCKS = 50  # Slack refuses a message with more blocks
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


def code_sections(title: str, body: str, *, max_blocks: int = MAX_BLOCKS) -> list[dict[str, Any]]:
    """A title and `body` as code blocks, as many sections as Slack allows; cut with a note beyond."""
    fence_room = SECTION_LIMIT - len("```\n\n```")
    pieces = _escaped_pieces(body.replace("```", "ˋˋˋ"), fence_room)
    room = max_blocks - 2
    blocks = [section(title)] + [section(f"```\n{piece}\n```") for piece in pieces[:room]]
    if len(pieces) > room:
        blocks.append(context(f"{ELLIPSIS} cut: {len(body):,} characters in all."))
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
