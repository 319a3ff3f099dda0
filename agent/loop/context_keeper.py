"""Keeps a running turn's context under the model's window (spec 3.1, 3.5, 3.6).

Before each step: when the context passes the trigger, old tool outputs are pruned first and
a summary is asked for only when pruning is not enough. When the provider still says the
request overflowed, the window it showed is remembered and the context is compacted again,
at most `max_overflow_compaction_attempts` times in a row.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from agent.compaction import (
    AppliedCompaction,
    CompactionFailedError,
    CompactionUnavailableError,
    apply_compaction,
    effective_window,
    observed_window,
    plan_tool_result_prune,
    prepare_compaction,
    should_block,
    should_compact,
    summarise,
)
from agent.loop.ports import CompactionFinished, CompactionStarted
from agent.messages import Message
from agent.model.base import ModelRequest
from agent.projection.projector import project
from agent.tokens import estimate_message, estimate_text
from agent.wire import FullCompactionBegin, FullCompactionCancel, FullCompactionComplete

if TYPE_CHECKING:
    from agent.loop.turn_loop import Loop, LoopConfig

OVERFLOW_GIVE_UP_TEXT = "Compaction failed to bring the context under the model window after {n} attempts."
NO_LONGER_FITS_TEXT = (
    "the conversation no longer fits the model's context window and compaction failed: {error}"
)


class ContextTooLargeError(Exception):
    """The context cannot be brought under the window; the turn stops with this message."""


class ContextKeeper:
    def __init__(self, loop: Loop, config: LoopConfig) -> None:
        self.loop = loop
        self.config = config.compaction
        self.configured_window = config.context_window
        self.observed: int | None = None
        self.after_last = 0  # no auto compaction again until the context grows past this
        self.overhead = estimate_text(loop.system_prompt) + estimate_text(json.dumps(loop.tool_declarations))

    @property
    def window(self) -> int:
        return effective_window(self.configured_window, self.observed)

    def used(self, history: list[Message]) -> int:
        return self.overhead + sum(estimate_message(message) for message in history)

    async def check(self, turn_id: str, step: int) -> None:
        used = self.used(self.loop.folder.history)
        if should_compact(used, self.window, self.config) and used > self.after_last:
            await self.compact(turn_id, step, used)

    async def recover_from_overflow(
        self, turn_id: str, step: int, attempt: int, request: ModelRequest
    ) -> None:
        if attempt > self.config.max_overflow_compaction_attempts:
            raise ContextTooLargeError(
                OVERFLOW_GIVE_UP_TEXT.format(n=self.config.max_overflow_compaction_attempts)
            )
        size = self.overhead + sum(estimate_message(message) for message in request.messages)
        self.observed = min(self.window, observed_window(size))
        await self.compact(turn_id, step, self.used(self.loop.folder.history), attempt=attempt)

    async def compact(self, turn_id: str, step: int, used: int, *, attempt: int = 0) -> None:
        key = f"{turn_id}-s{step}:compaction:{attempt}"
        history = self.loop.folder.history
        pruned = plan_tool_result_prune(
            history, self.window, self.config, request_overhead_tokens=self.overhead
        )
        if pruned is not None:
            self.loop.write(pruned.record(), f"{key}:prune")
            self.after_last = pruned.tokens_after
            self._report(CompactionFinished("pruned", 0, pruned.tokens_before, pruned.tokens_after))
            return
        await self._summarise(key, history, used)

    async def _summarise(self, key: str, history: list[Message], used: int) -> None:
        self._report(CompactionStarted(used))
        self.loop.write(FullCompactionBegin(source="auto"), f"{key}:begin")
        try:
            plan = prepare_compaction(
                history,
                "auto",
                self.window,
                self.config,
                request_overhead_tokens=self.overhead,
                tokens_before=used,
            )
            result = await self.loop._cancellable(summarise(plan, self.loop.model, project=project), key, 0)
        except (CompactionFailedError, CompactionUnavailableError) as error:
            self._give_up(key, used, str(error))
            return
        applied = apply_compaction(self.loop.folder.history, plan.history, result)
        if not isinstance(applied, AppliedCompaction):
            self.loop.write(FullCompactionCancel(reason=applied.reason), f"{key}:cancel")
            self._report(CompactionFinished("stale", detail=applied.reason))
            return
        n = applied.result.compacted_count
        record = applied.result.record(wire_start=plan.history[0].id, wire_end=plan.history[n - 1].id)
        record_id = self.loop.write(record, f"{key}:apply")
        self.loop.sink.compacted(self.loop.folder.history, record_id)
        self.loop.write(FullCompactionComplete(), f"{key}:complete")
        self.after_last = applied.result.tokens_after
        self._report(CompactionFinished("done", n, applied.result.tokens_before, applied.result.tokens_after))

    def _give_up(self, key: str, used: int, error: str) -> None:
        self.loop.write(FullCompactionCancel(reason=error[:500]), f"{key}:cancel")
        self._report(CompactionFinished("failed", detail=error))
        if should_block(used, self.window, self.config) and used > self.window:
            raise ContextTooLargeError(NO_LONGER_FITS_TEXT.format(error=error))

    def _report(self, event: CompactionStarted | CompactionFinished) -> None:
        self.loop.reporter.report(event)
