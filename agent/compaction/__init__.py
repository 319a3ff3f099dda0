"""Compaction: the seed boundary module. The rules, shapes, pruning and service live in their
own modules; this one gathers the names the rest of the code uses."""

from agent.compaction._transaction import (
    CompactionOutcome,
    CompactionPort,
    CompactionStage,
    run_compaction,
)
from agent.compaction.prompt import COMPACTION_INSTRUCTION, compaction_instruction, summary_request
from agent.compaction.pruning import PrunePlan, plan_tool_result_prune, pruned_pointer
from agent.compaction.rules import (
    DEFAULT_COMPACTION_CONFIG,
    CompactionConfig,
    CompactionSource,
    Estimator,
    can_split_after,
    compute_compact_count,
    effective_window,
    observed_window,
    reduce_compact_on_overflow,
    should_block,
    should_compact,
)
from agent.compaction.service import (
    MAX_COMPACTION_RETRY_ATTEMPTS,
    AppliedCompaction,
    CompactionFailedError,
    CompactionPlan,
    CompactionResult,
    CompactionUnavailableError,
    StaleCompaction,
    apply_compaction,
    prepare_compaction,
    summarise,
)
from agent.compaction.shape import (
    COMPACTION_SUMMARY_PREFIX,
    compacted_history,
    compaction_shape,
    context_summary_text,
    history_safe_to_compact,
    summary_message,
    unsafe_reason,
)
from agent.compaction.shrink import drop_oldest_message, shrink_history_after_overflow

__all__ = [
    "COMPACTION_INSTRUCTION",
    "COMPACTION_SUMMARY_PREFIX",
    "DEFAULT_COMPACTION_CONFIG",
    "MAX_COMPACTION_RETRY_ATTEMPTS",
    "AppliedCompaction",
    "CompactionConfig",
    "CompactionFailedError",
    "CompactionOutcome",
    "CompactionPlan",
    "CompactionPort",
    "CompactionResult",
    "CompactionSource",
    "CompactionStage",
    "CompactionUnavailableError",
    "Estimator",
    "PrunePlan",
    "StaleCompaction",
    "apply_compaction",
    "can_split_after",
    "compacted_history",
    "compaction_instruction",
    "compaction_shape",
    "compute_compact_count",
    "context_summary_text",
    "drop_oldest_message",
    "effective_window",
    "history_safe_to_compact",
    "observed_window",
    "plan_tool_result_prune",
    "prepare_compaction",
    "pruned_pointer",
    "reduce_compact_on_overflow",
    "run_compaction",
    "should_block",
    "should_compact",
    "shrink_history_after_overflow",
    "summarise",
    "summary_message",
    "summary_request",
    "unsafe_reason",
]
