"""Keeps a running turn's context under the model's window (docs/context-core.md, "Compaction").

Before each step: when the context passes the trigger, old tool outputs are pruned first and
a summary is asked for only when pruning is not enough. When the provider still says the
request overflowed, the window it showed is remembered and the context is compacted again,
at most `max_overflow_compaction_attempts` times in a row.

The keeper sees the turn only through `ContextHost`, so it does not depend on the loop that
drives it.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from pydantic import BaseModel

from agent.compaction import (
    CompactionConfig,
    CompactionOutcome,
    CompactionStage,
    effective_window,
    observed_window,
    plan_tool_result_prune,
    run_compaction,
    should_block,
    should_compact,
)
from agent.loop.ports import CompactionFinished, CompactionStarted, TurnEvent
from agent.messages import Message
from agent.model.base import ChatModel, ModelRequest
from agent.offload import over_messages
from agent.tokens import estimate_message

T = TypeVar("T")

OVERFLOW_GIVE_UP_TEXT = "Compaction failed to bring the context under the model window after {n} attempts."
NO_LONGER_FITS_TEXT = (
    "the conversation no longer fits the model's context window and compaction failed: {error}"
)


class ContextTooLargeError(Exception):
    """The context cannot be brought under the window; the turn stops with this message."""


class ContextHost(Protocol):
    """The turn, as the keeper needs it."""

    @property
    def history(self) -> list[Message]:
        """The turn's folded history, with every record written so far applied."""
        ...

    async def write(self, record: BaseModel, once_key: str) -> str:
        """Record durably (once per key) and fold it in; returns the wire entry id."""
        ...

    def report(self, event: TurnEvent) -> None: ...

    async def note_checkpoint(self, through: str) -> None:
        """A summary was applied by wire entry `through`."""
        ...

    async def cancellable(self, work: Awaitable[T], turn_id: str, step: int) -> T:
        """Await `work`; when the turn is cancelled meanwhile, stop it and end the turn."""
        ...


class ContextKeeper:
    def __init__(
        self,
        host: ContextHost,
        model: ChatModel,
        *,
        context_window: int,
        config: CompactionConfig,
        request_overhead: int,
    ) -> None:
        self.host = host
        self.model = model
        self.config = config
        self.configured_window = context_window
        self.observed: int | None = None
        self.after_last = 0  # no auto compaction again until the context grows past this
        self.overhead = request_overhead

    @property
    def window(self) -> int:
        return effective_window(self.configured_window, self.observed)

    def used(self, history: list[Message]) -> int:
        return self.overhead + sum(estimate_message(message) for message in history)

    async def check(self, turn_id: str, step: int) -> None:
        history = self.host.history
        used = await over_messages(len(history), lambda: self.used(history))
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
        await self.compact(turn_id, step, self.used(self.host.history), attempt=attempt)

    async def compact(self, turn_id: str, step: int, used: int, *, attempt: int = 0) -> None:
        # Record keys as running sessions have them on the wire: a retried job dedupes on them.
        key = f"{turn_id}-s{step}:compaction:{attempt}"
        history = self.host.history
        pruned = plan_tool_result_prune(
            history, self.window, self.config, request_overhead_tokens=self.overhead
        )
        if pruned is not None:
            await self.host.write(pruned.record(), f"{key}:prune")
            self.after_last = pruned.tokens_after
            finished = CompactionFinished(
                "pruned", 0, pruned.tokens_before, pruned.tokens_after, pruned=len(pruned.replacements)
            )
            self.host.report(finished)
            return
        port = _TurnCompaction(self.host, key, turn_id, step)
        outcome = await run_compaction(
            "auto", history, self.window, self.config, self.overhead, self.model, port
        )
        if outcome.kind == "done":
            self.after_last = outcome.tokens_after
        elif outcome.kind == "failed" and should_block(used, self.window, self.config) and used > self.window:
            raise ContextTooLargeError(NO_LONGER_FITS_TEXT.format(error=outcome.detail))


@dataclass(frozen=True)
class _TurnCompaction:
    """The compaction port of one automatic compaction inside a turn."""

    host: ContextHost
    key: str
    turn_id: str
    step: int

    async def write(self, record: BaseModel, stage: CompactionStage) -> str:
        return await self.host.write(record, f"{self.key}:{stage}")

    async def current_history(self) -> list[Message]:
        return self.host.history

    async def save_checkpoint(self, through: str) -> None:
        await self.host.note_checkpoint(through)

    async def cancellable(self, work: Awaitable[T]) -> T:
        return await self.host.cancellable(work, self.turn_id, self.step)

    def started(self, tokens_before: int) -> None:
        self.host.report(CompactionStarted(tokens_before))

    def finished(self, outcome: CompactionOutcome) -> None:
        self.host.report(
            CompactionFinished(
                outcome.kind,
                outcome.compacted,
                outcome.tokens_before,
                outcome.tokens_after,
                outcome.detail,
                dropped=outcome.dropped,
            )
        )
