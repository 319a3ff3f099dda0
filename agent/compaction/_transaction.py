"""One compaction, from its begin record to its complete or cancel record.

Automatic compaction (the loop's context keeper) and manual compaction (`/agent compact`, run
as a job between turns) write the same records in the same order; only where they write, how
they re-read the history and whom they tell differ, and that is the `CompactionPort` they pass
(docs/context-core.md, "Compaction"):

    begin → prepare → summarise → stale check → apply record → checkpoint → complete

A failure to prepare or summarise, and a history that changed in a way the summary did not
see, end it with a cancel record instead; the history is then left as it was.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel

from agent.compaction.rules import CompactionConfig, CompactionSource
from agent.compaction.service import (
    AppliedCompaction,
    CompactionFailedError,
    CompactionUnavailableError,
    apply_compaction,
    prepare_compaction,
    summarise,
)
from agent.messages import Message
from agent.model.base import ChatModel
from agent.tokens import estimate_message
from agent.wire import FullCompactionBegin, FullCompactionCancel, FullCompactionComplete

T = TypeVar("T")

# The records of one compaction; the loop derives each record's idempotency key from these.
CompactionStage = Literal["begin", "cancel", "apply", "complete"]
CANCEL_REASON_LIMIT = 500


@dataclass(frozen=True)
class CompactionOutcome:
    """How a compaction ended: `done` applied a summary of the oldest `compacted` messages."""

    kind: Literal["done", "failed", "stale"]
    compacted: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    detail: str | None = None
    dropped: int = 0  # oldest messages the summary request left out after an overflow


class CompactionPort(Protocol):
    """Where a compaction writes, reads and reports; the loop and the manual job each supply one."""

    async def write(self, record: BaseModel, stage: CompactionStage) -> str:
        """Append `record` (once per stage of this compaction); returns its wire entry id."""
        ...

    async def current_history(self) -> list[Message]:
        """The history as it is now, with everything written so far folded in."""
        ...

    async def save_checkpoint(self, through: str) -> None:
        """The summary was applied by wire entry `through`: keep the folded history up to it."""
        ...

    async def cancellable(self, work: Awaitable[T]) -> T:
        """Await `work`, or stop it when the caller is cancelled."""
        ...

    def started(self, tokens_before: int) -> None: ...

    def finished(self, outcome: CompactionOutcome) -> None: ...


async def run_compaction(
    source: CompactionSource,
    history: Sequence[Message],
    window: int,
    config: CompactionConfig,
    overhead: int,
    model: ChatModel,
    port: CompactionPort,
) -> CompactionOutcome:
    """Summarise the oldest part of `history` and apply it, or record why not."""
    tokens_before = overhead + sum(estimate_message(message) for message in history)
    port.started(tokens_before)
    await port.write(FullCompactionBegin(source=source), "begin")
    try:
        plan = prepare_compaction(
            history, source, window, config, request_overhead_tokens=overhead, tokens_before=tokens_before
        )
        result = await port.cancellable(summarise(plan, model))
    except (CompactionFailedError, CompactionUnavailableError) as error:
        return await _cancel(port, CompactionOutcome("failed", detail=str(error)))
    applied = apply_compaction(await port.current_history(), plan.history, result)
    if not isinstance(applied, AppliedCompaction):
        return await _cancel(port, CompactionOutcome("stale", detail=applied.reason))
    done = applied.result
    n = done.compacted_count
    record = done.record(wire_start=plan.history[0].id, wire_end=plan.history[n - 1].id)
    record_id = await port.write(record, "apply")
    await port.save_checkpoint(record_id)
    await port.write(FullCompactionComplete(), "complete")
    outcome = CompactionOutcome("done", n, done.tokens_before, done.tokens_after, dropped=done.dropped_count)
    return _finish(port, outcome)


async def _cancel(port: CompactionPort, outcome: CompactionOutcome) -> CompactionOutcome:
    reason = (outcome.detail or "")[:CANCEL_REASON_LIMIT]
    await port.write(FullCompactionCancel(reason=reason), "cancel")
    return _finish(port, outcome)


def _finish(port: CompactionPort, outcome: CompactionOutcome) -> CompactionOutcome:
    port.finished(outcome)
    return outcome
