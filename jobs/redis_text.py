"""Redis replies as text.

Our clients return bytes (no `decode_responses`), but redis-py types every reply as
`bytes | str`, since a client may decode. These helpers take either, so callers read text and
the type checker agrees.
"""

from __future__ import annotations

from collections.abc import Mapping


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def optional_text(value: bytes | str | None) -> str | None:
    """The reply as text; None when Redis had nothing (an absent key or field)."""
    return None if value is None else text(value)


def text_map(
    reply: Mapping[bytes, bytes] | Mapping[str, str] | Mapping[bytes | str, bytes | str],
) -> dict[str, str]:
    """A hash (HGETALL) with its fields and values as text."""
    return {text(field): text(value) for field, value in reply.items()}
