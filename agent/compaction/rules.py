"""Compaction rules (context-core.md §3.1, 3.3, 3.4): when to compact, where the compacted prefix may end,
and how many leading messages to compact.

Everything here is pure and works on a list of messages plus an injectable estimator, so the
vectors can pin the estimate (`{fixed: n}`) and the service can pass measured counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent.messages import Message
from agent.tokens import estimate_message

Estimator = Callable[[Message], int]
CompactionSource = Literal["auto", "manual"]

# An overflow tells us the real window is smaller than the request we sent; remember 85 % of
# that request so the next attempt leaves the same head-room the trigger ratio does.
OBSERVED_WINDOW_RATIO = 0.85


class CompactionConfig(BaseModel):
    """`DEFAULT_COMPACTION_CONFIG` of context-core.md §3.1. Unbounded limits are `float('inf')`; the
    vectors' string "Infinity" is accepted for any number."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="strings")

    trigger_ratio: float = 0.85
    block_ratio: float = 0.85
    # Head-room for the next model answer: with a large window the reserve, not the ratio,
    # decides (256 000 → compact at 206 000).
    reserved_context_size: float = 50_000
    max_compaction_per_turn: float = math.inf
    max_overflow_compaction_attempts: int = 3
    max_recent_messages: float = 4
    max_recent_user_messages: float = math.inf
    max_recent_size_ratio: float = 0.2
    min_overflow_reduction_ratio: float = 0.05


DEFAULT_COMPACTION_CONFIG = CompactionConfig()


# -- trigger (3.1) ------------------------------------------------------------------------


def should_compact(
    used: float, max_size: float, config: CompactionConfig = DEFAULT_COMPACTION_CONFIG
) -> bool:
    return _over_threshold(used, max_size, config.trigger_ratio, config.reserved_context_size)


def should_block(used: float, max_size: float, config: CompactionConfig = DEFAULT_COMPACTION_CONFIG) -> bool:
    return _over_threshold(used, max_size, config.block_ratio, config.reserved_context_size)


def _over_threshold(used: float, max_size: float, ratio: float, reserve: float) -> bool:
    if max_size <= 0:
        return False
    if used >= max_size * ratio:
        return True
    # A reserve that is not smaller than the window would trigger on an empty context.
    return 0 < reserve < max_size and used + reserve >= max_size


def observed_window(estimated_request_tokens: int) -> int:
    """The window to remember after a request of this size overflowed (context-core.md §3.6)."""
    return max(1, math.floor(estimated_request_tokens * OBSERVED_WINDOW_RATIO))


def effective_window(configured: int, observed: int | None) -> int:
    if observed is None:
        return configured
    if configured <= 0:
        return observed
    return min(configured, observed)


# -- split points (3.3) ---------------------------------------------------------------------


def can_split_after(messages: Sequence[Message], i: int) -> bool:
    """May the compacted prefix end at index `i` (inclusive) without splitting a tool exchange?"""
    if i < 0 or i >= len(messages):
        return False
    message = messages[i]
    if message.role == "user":
        return False
    if message.role == "assistant" and message.tool_calls:
        return False
    if i + 1 < len(messages) and messages[i + 1].role == "tool":
        return False
    return not (message.role == "tool" and _prefix_ends_with_open_tool_exchange(messages, i))


def _prefix_ends_with_open_tool_exchange(messages: Sequence[Message], i: int) -> bool:
    start = i
    while start >= 0 and messages[start].role == "tool":
        start -= 1
    run = i - start
    if start < 0:
        return False
    caller = messages[start]
    return caller.role == "assistant" and run < len(caller.tool_calls)


# -- how much to compact (3.4) --------------------------------------------------------------


def compute_compact_count(
    messages: Sequence[Message],
    source: CompactionSource,
    max_size: float,
    config: CompactionConfig = DEFAULT_COMPACTION_CONFIG,
    estimate: Estimator = estimate_message,
) -> int:
    """n: compact `messages[:n]` into one summary and keep `messages[n:]` verbatim."""
    manual = source == "manual"
    best = _last_split(messages) if manual else _auto_count(messages, max_size, config, estimate)
    return _fit_to_window(messages, best, max_size, estimate)


def _last_split(messages: Sequence[Message]) -> int:
    # Index 0 is never a manual split: compacting one message into a summary gains nothing.
    for i in range(len(messages) - 1, 0, -1):
        if can_split_after(messages, i):
            return i + 1
    return 0


def _auto_count(
    messages: Sequence[Message], max_size: float, config: CompactionConfig, estimate: Estimator
) -> int:
    length = len(messages)
    size_limit = max_size * config.max_recent_size_ratio
    recent_messages, recent_users, recent_size, best = 1, 0, 0, 0
    while recent_messages < length:
        split = length - recent_messages - 1
        added = messages[length - recent_messages]
        if added.role == "user":
            recent_users += 1
        recent_size += estimate(added)
        if can_split_after(messages, split):
            best = split + 1
        if best and (
            recent_messages >= config.max_recent_messages
            or recent_users >= config.max_recent_user_messages
            or recent_size >= size_limit
        ):
            break
        recent_messages += 1
    return best


def _fit_to_window(messages: Sequence[Message], n: int, max_size: float, estimate: Estimator) -> int:
    """Shrink n until the compacted prefix itself fits the window (the summariser must read it).

    The spec walks back from n subtracting estimates; because estimates are never negative the
    prefix sums only grow, so walking forward until they pass the window gives the same answer
    while estimating only the messages that fit (a fraction of a long history).
    """
    if max_size <= 0 or n <= 0:
        return n
    fitting = _messages_within(messages, n, max_size, estimate)
    if fitting == n:
        return n
    for k in range(fitting, 0, -1):
        if can_split_after(messages, k - 1):
            return k
    # Nothing fits: the spec settles for the smallest split point that exists.
    for k in range(fitting + 1, n):
        if can_split_after(messages, k - 1):
            return k
    return n


def _messages_within(messages: Sequence[Message], n: int, max_size: float, estimate: Estimator) -> int:
    """How many leading messages (at most n) fit in max_size together."""
    total = 0
    for i in range(n):
        total += estimate(messages[i])
        if total > max_size:
            return i
    return n


def reduce_compact_on_overflow(
    messages: Sequence[Message],
    max_size: float,
    config: CompactionConfig = DEFAULT_COMPACTION_CONFIG,
    estimate: Estimator = estimate_message,
) -> int:
    """A smaller n after the summary request overflowed: give up at least 5 % of the window."""
    need = max(1, math.ceil(max_size * config.min_overflow_reduction_ratio))
    removed, best = 0, 0
    for i in range(len(messages) - 2, 0, -1):
        removed += estimate(messages[i + 1])
        if not can_split_after(messages, i):
            continue
        best = i + 1
        if removed >= need:
            return best
    return best or len(messages)
