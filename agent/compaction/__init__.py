"""Compaction (docs/context-core.md, "Compaction"): when to compact, how much, and the one
transaction that does it for the loop and for `/agent compact` alike.

The rules, shapes, pruning and summary service live in their own modules; this surface holds
only the names code outside the package uses.
"""

from agent.compaction._transaction import (
    CompactionOutcome,
    CompactionPort,
    CompactionStage,
    run_compaction,
)
from agent.compaction.pruning import plan_tool_result_prune
from agent.compaction.rules import (
    DEFAULT_COMPACTION_CONFIG,
    CompactionConfig,
    can_split_after,
    compute_compact_count,
    effective_window,
    observed_window,
    reduce_compact_on_overflow,
    should_block,
    should_compact,
)
from agent.compaction.shape import history_safe_to_compact

__all__ = [
    "DEFAULT_COMPACTION_CONFIG",
    "CompactionConfig",
    "CompactionOutcome",
    "CompactionPort",
    "CompactionStage",
    "can_split_after",
    "compute_compact_count",
    "effective_window",
    "history_safe_to_compact",
    "observed_window",
    "plan_tool_result_prune",
    "reduce_compact_on_overflow",
    "run_compaction",
    "should_block",
    "should_compact",
]
