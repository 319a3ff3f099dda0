"""A provider's `usage` object → `Usage`, wherever and however the provider reports it.

OpenAI puts cached prompt tokens in `prompt_tokens_details.cached_tokens`, DeepSeek in
`prompt_cache_hit_tokens`, Moonshot (Kimi) in a top-level `cached_tokens`; a streamed answer
brings usage in a last chunk with no choices (OpenAI, vLLM, DeepSeek) or inside the final
choice (Moonshot).
"""

from __future__ import annotations

from typing import Any

from agent.model.base import Usage


def usage_from(payload: Any) -> Usage | None:
    """The usage a provider sent, or None when the payload carries none."""
    if not isinstance(payload, dict) or not payload:
        return None
    return Usage(
        input_tokens=_count(payload.get("prompt_tokens")),
        output_tokens=_count(payload.get("completion_tokens")),
        cached_tokens=_cached(payload),
    )


def usage_in_chunk(chunk: dict[str, Any]) -> Usage | None:
    """Usage at the top of a chunk or inside one of its choices."""
    found = usage_from(chunk.get("usage"))
    for choice in chunk.get("choices") or []:
        if isinstance(choice, dict):
            found = usage_from(choice.get("usage")) or found
    return found


def _cached(payload: dict[str, Any]) -> int:
    details = payload.get("prompt_tokens_details")
    if isinstance(details, dict) and details.get("cached_tokens"):
        return _count(details["cached_tokens"])
    return _count(payload.get("prompt_cache_hit_tokens") or payload.get("cached_tokens"))


def _count(value: Any) -> int:
    """A token count; anything that is not a non-negative whole number counts as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
