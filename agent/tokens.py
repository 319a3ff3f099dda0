"""Token estimate (context-core.md §3.2): cheap, deterministic, and cached per message object.

Per Unicode code point: ceil(ascii / 4) + non-ascii. Every part and field is rounded up on
its own, so a message's estimate is the sum of its pieces, never one ceil over the total.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from agent.messages import MEDIA_PART_TYPES, Message, TextPart, ThinkPart
from agent.model.base import ModelRequest, ModelResponse, Usage

MEDIA_TOKEN_ESTIMATE = 2000  # any image, audio or video part, whatever its URL size
ROLE_TOKENS = {"user": 1, "tool": 1, "system": 2, "assistant": 3}
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def estimate_text(text: str) -> int:
    if text.isascii():
        return math.ceil(len(text) / 4)
    non_ascii = len(_NON_ASCII.findall(text))
    return math.ceil((len(text) - non_ascii) / 4) + non_ascii


def estimate_request_overhead(system_prompt: str, tool_declarations: list[dict[str, Any]]) -> int:
    """What every request costs besides its messages: the system prompt and the tool list."""
    return estimate_text(system_prompt) + estimate_text(json.dumps(tool_declarations))


def estimate_message(message: Message) -> int:
    memo = message.memo()
    total = memo.get("tokens")
    if total is None:
        total = memo["tokens"] = _estimate_uncached(message)
    return total


def _estimate_uncached(message: Message) -> int:
    total = ROLE_TOKENS.get(message.role, 0)
    for part in message.content:
        if isinstance(part, TextPart):
            total += estimate_text(part.text)
        elif isinstance(part, ThinkPart):
            total += estimate_text(part.think)
        elif part.type in MEDIA_PART_TYPES:
            total += MEDIA_TOKEN_ESTIMATE
    for call in message.tool_calls:
        total += estimate_text(call.name) + estimate_text(json.dumps(call.arguments, ensure_ascii=False))
    return total


def answer_usage(
    response: ModelResponse, request: ModelRequest, overhead: int | None = None
) -> dict[str, Any]:
    """What an answer cost, as the provider reported it; without a report (or an empty one: no
    real request takes 0 tokens), our estimate, labelled as one. `overhead` is the caller's
    estimate of the system prompt and tool declarations (else the system prompt's)."""
    reported = response.usage
    if reported is not None and (reported.input_tokens or reported.output_tokens):
        return reported.model_dump()
    fixed = overhead if overhead is not None else estimate_text(request.system or "")
    estimate = Usage(
        input_tokens=fixed + sum(estimate_message(message) for message in request.messages),
        output_tokens=estimate_message(response.message),
        estimated=True,
    )
    return estimate.model_dump()
