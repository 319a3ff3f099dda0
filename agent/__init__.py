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
from agent.projection.anomalies import Anomaly
from agent.projection.incremental import IncrementalProjector
from agent.projection.inherited import close_trailing_open_tool_exchange
from agent.projection.projector import project, project_strict
from agent.projection.rendering import render_tool_result
from agent.projection.report import ProjectionReporter
from agent.tokens import estimate_message, estimate_text
from agent.tools import (
    BatchAdapter,
    CancelSignal,
    ToolExecutor,
    ToolOutputAccumulator,
    ToolScheduler,
    accesses_conflict,
    parse_tool_call_arguments,
)

__all__ = [
    "Anomaly",
    "BatchAdapter",
    "CancelSignal",
    "CompactionConfig",
    "IncrementalProjector",
    "Message",
    "ProjectionReporter",
    "ToolCall",
    "ToolExecutor",
    "ToolOutputAccumulator",
    "ToolScheduler",
    "accesses_conflict",
    "can_split_after",
    "close_trailing_open_tool_exchange",
    "compute_compact_count",
    "estimate_message",
    "estimate_text",
    "fold",
    "history_safe_to_compact",
    "parse_tool_call_arguments",
    "project",
    "project_strict",
    "reduce_compact_on_overflow",
    "render_tool_result",
    "should_block",
    "should_compact",
]
