"""Manual compaction (`/agent compact`, `!compact`): one summary for the session, between turns.

The job holds the session's lease like a turn, so input that arrives meanwhile waits in the
inbox and starts a turn afterwards. Before applying the summary it re-reads the session from
Redis and cancels the apply when the history it summarised is no longer a prefix of it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TypeVar

from pydantic import BaseModel

from agent.compaction import (
    DEFAULT_COMPACTION_CONFIG,
    CompactionOutcome,
    CompactionStage,
    run_compaction,
)
from agent.messages import Message
from agent.model.base import ChatModel
from agent.offload import in_thread
from agent.tokens import estimate_request_overhead
from jobs import runtime
from jobs.keys import SessionKey
from jobs.queues import schedule_delivery, schedule_turn
from jobs.session.history import load_fold, save_checkpoint
from jobs.session.lease import Lease
from jobs.session.notices import CompactionNotice
from jobs.session.state import PARKED_STATES, state_of
from jobs.session.store import SessionStore
from jobs.settings import Settings
from jobs.turn.host import host
from jobs.turn.runner import tool_setup
from jobs.usage import UsageMeter, usage_to_count

T = TypeVar("T")
log = logging.getLogger(__name__)

BUSY_TEXT = "a turn is running; compact after it ends"
FAILED_KEPT_TEXT = "compaction failed; kept the full history ({reason})"
MANUAL_COMPACTION = "compaction"  # the "turn" manual compactions' usage is summed under (jobs.usage)


async def run_manual_compaction(session_key: str, by: str) -> str:
    """RQ entry point, awaited on the turn host's loop; its synchronous steps in the state lane."""
    key = SessionKey.parse(session_key)
    settings = runtime.settings()
    store = SessionStore(runtime.redis_client(), key)
    turns = host()
    lease = await turns.blocking(_lease, store, settings)
    if lease is None:
        return "busy"
    with lease:
        try:
            outcome = await _compact_unless_parked(store, settings, by)
        finally:
            moved = await turns.blocking(lease.hand_back)
    await turns.blocking(_after, store, settings, moved)
    return outcome


def _lease(store: SessionStore, settings: Settings) -> Lease | None:
    lease = Lease.acquire(store, owner="compaction", ttl_ms=int(settings.LEASE_TTL_SECONDS * 1000))
    if lease is None:
        _notice(store, CompactionNotice(state="failed", detail=BUSY_TEXT))
    return lease


def _after(store: SessionStore, settings: Settings, moved: bool) -> None:
    if moved and state_of(store) not in PARKED_STATES:
        schedule_turn(store.redis, store.key, turn_timeout_s=settings.TURN_TIMEOUT_SECONDS)


async def _compact_unless_parked(store: SessionStore, settings: Settings, by: str) -> str:
    if await host().blocking(_parked, store):  # parked after this job was queued: its step is open
        return "busy"
    return await compact(store, settings, runtime.build_model(settings), by)


def _parked(store: SessionStore) -> bool:
    if state_of(store) not in PARKED_STATES:
        return False
    _notice(store, CompactionNotice(state="failed", detail=BUSY_TEXT))
    return True


async def compact(store: SessionStore, settings: Settings, model: ChatModel, by: str) -> str:
    tools = tool_setup()
    outcome = await run_compaction(
        "manual",
        load_fold(store).history,
        settings.LLM_CONTEXT_WINDOW,
        DEFAULT_COMPACTION_CONFIG,
        estimate_request_overhead(tools.system_prompt, tools.declarations),
        model,
        _SessionCompaction(store, by),
    )
    return "compacted" if outcome.kind == "done" else "failed"


class _SessionCompaction:
    """The compaction port of a manual compaction: the session's wire log and its thread."""

    def __init__(self, store: SessionStore, by: str) -> None:
        self.store = store
        self.by = by

    async def write(self, record: BaseModel, stage: CompactionStage) -> str:
        return await in_thread(self._write, record)

    def _write(self, record: BaseModel) -> str:
        record_id = self.store.append(record)  # the job holds the lease; it appends each record once
        counted = usage_to_count(record, record_id)
        if counted is not None:  # the summary request, charged to whoever asked for the compaction
            UsageMeter(self.store.redis, self.store.key, MANUAL_COMPACTION, self.by).count(*counted)
        return record_id

    async def current_history(self) -> list[Message]:
        return await in_thread(lambda: load_fold(self.store).history)

    async def save_checkpoint(self, through: str) -> None:
        history = await self.current_history()
        await in_thread(save_checkpoint, self.store, history, through)

    async def cancellable(self, work: Awaitable[T]) -> T:
        return await work  # nothing cancels a manual compaction

    def started(self, tokens_before: int) -> None:
        _notice(self.store, CompactionNotice(state="started", detail=f"asked by <@{self.by}>"))

    def finished(self, outcome: CompactionOutcome) -> None:
        if outcome.kind == "done":
            notice = CompactionNotice(
                state="done",
                compacted=outcome.compacted,
                tokens_before=outcome.tokens_before,
                tokens_after=outcome.tokens_after,
                dropped=outcome.dropped or None,
            )
            _notice(self.store, notice)
            return
        reason = outcome.detail or ""
        _notice(self.store, CompactionNotice(state="failed", detail=FAILED_KEPT_TEXT.format(reason=reason)))
        log.warning("manual compaction of %s failed: %s", self.store.key, reason)


def _notice(store: SessionStore, notice: CompactionNotice) -> None:
    store.post_notice(notice)
    schedule_delivery(store.redis, store.key)
