"""The pure core: messages, wire fold, projection, compaction, tools, loop. No Slack, Redis or RQ."""

from agent.compaction import (
    CompactionConfig,
    can_split_after,
    compute_compact_count,
    history_safe_to_compact,
    reduce_compact_on_overflow,
    should_block,
    should_compact,
)
from agent.fold import fold
from agent.messages import Message, ToolCall
from agent.tokens import estimate_message, estimate_text

__all__ = [
    "CompactionConfig",
    "Message",
    "ToolCall",
    "can_split_after",
    "compute_compact_count",
    "estimate_message",
    "estimate_text",
    "fold",
    "history_safe_to_compact",
    "reduce_compact_on_overflow",
    "should_block",
    "should_compact",
]
