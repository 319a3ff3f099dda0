"""Shrinking the history a summary request is built from, when that request fails (context-core.md §3.5).

Both functions keep a suffix of the input, so the result is always a slice of the same message
objects; neither ever starts the kept part with a tool result, which would be an orphan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from agent.compaction.rules import Estimator
from agent.messages import Message
from agent.tokens import estimate_message

# Share of the history's estimate kept on the 1st, 2nd and 3rd (and later) overflow: each retry
# gives up more of the oldest context rather than failing the compaction outright.
OVERFLOW_SHRINK_RATIOS = (0.7, 0.5, 0.35)


def shrink_history_after_overflow(
    messages: Sequence[Message], attempt: int, estimate: Estimator = estimate_message
) -> list[Message]:
    """The newest messages within floor(total × ratio); the oldest one always goes."""
    if attempt < 1:
        raise ValueError(f"overflow attempts count from 1, got {attempt}")
    ratio = OVERFLOW_SHRINK_RATIOS[min(attempt, len(OVERFLOW_SHRINK_RATIOS)) - 1]
    sizes = [estimate(message) for message in messages]
    budget = math.floor(sum(sizes) * ratio)
    start, kept = len(messages), 0
    while start > 0 and kept + sizes[start - 1] <= budget:
        start -= 1
        kept += sizes[start]
    return _without_leading_tool_results(messages, max(start, 1))


def drop_oldest_message(messages: Sequence[Message]) -> list[Message]:
    """The retry step after a truncated or empty summary: one message less, still well formed."""
    return _without_leading_tool_results(messages, 1)


def _without_leading_tool_results(messages: Sequence[Message], start: int) -> list[Message]:
    while start < len(messages) and messages[start].role == "tool":
        start += 1
    return list(messages[start:])
