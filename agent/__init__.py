"""The pure core: messages, wire fold, projection, compaction, tools, loop. No Slack, Redis or RQ."""

from agent.fold import fold
from agent.messages import Message, ToolCall
from agent.tokens import estimate_message, estimate_text

__all__ = ["Message", "ToolCall", "estimate_message", "estimate_text", "fold"]
