"""Manual compaction (`/agent compact`, `!compact`): one summary for the session, between turns.

The job holds the session's lease like a turn, so input that arrives meanwhile waits in the
inbox and starts a turn afterwards. Before applying the summary it re-reads the session from
Redis and cancels the apply when the history it summarised is no longer a prefix of it.
"""

from __future__ import annotations

import asyncio
import json
import logging

from agent.compaction import (
    AppliedCompaction,
    CompactionFailedError,
    CompactionUnavailableError,
    apply_compaction,
    prepare_compaction,
    summarise,
)
from agent.model.base import ChatModel
from agent.projection.projector import project
from agent.tokens import estimate_text
from agent.wire import FullCompactionBegin, FullCompactionCancel, FullCompactionComplete
from jobs import runtime
from jobs.keys import SessionKey
from jobs.queues import schedule_delivery, schedule_turn
from jobs.session.history import load_fold, save_checkpoint
from jobs.session.lease import Lease
from jobs.session.notices import CompactionNotice
from jobs.session.store import SessionStore
from jobs.settings import Settings
from jobs.turn.runner import tool_setup

log = logging.getLogger(__name__)

BUSY_TEXT = "a turn is running; compact after it ends"
FAILED_KEPT_TEXT = "compaction failed; kept the full history ({reason})"


def run_manual_compaction(session_key: str, by: str) -> str:
    key = SessionKey.parse(session_key)
    redis = runtime.redis_client()
    settings = runtime.settings()
    store = SessionStore(redis, key)
    lease = Lease.acquire(store, owner="compaction", ttl_ms=int(settings.LEASE_TTL_SECONDS * 1000))
    if lease is None:
        _notice(store, CompactionNotice(state="failed", detail=BUSY_TEXT))
        return "busy"
    with lease:
        outcome = asyncio.run(compact(store, settings, runtime.build_model(settings), by))
        if not lease.release_if_idle():
            schedule_turn(redis, key, turn_timeout_s=settings.TURN_TIMEOUT_SECONDS)
    return outcome


async def compact(store: SessionStore, settings: Settings, model: ChatModel, by: str) -> str:
    history = load_fold(store).history
    overhead = _request_overhead()
    _notice(store, CompactionNotice(state="started", detail=f"asked by <@{by}>"))
    store.append(FullCompactionBegin(source="manual"))
    try:
        plan = prepare_compaction(
            history, "manual", settings.LLM_CONTEXT_WINDOW, request_overhead_tokens=overhead
        )
        result = await summarise(plan, model, project=project)
    except (CompactionUnavailableError, CompactionFailedError) as error:
        return _failed(store, str(error))
    applied = apply_compaction(load_fold(store).history, plan.history, result)
    if not isinstance(applied, AppliedCompaction):
        return _failed(store, applied.reason)
    n = applied.result.compacted_count
    record_id = store.append(
        applied.result.record(wire_start=plan.history[0].id, wire_end=plan.history[n - 1].id)
    )
    save_checkpoint(store, load_fold(store).history, record_id)
    store.append(FullCompactionComplete())
    done = applied.result
    _notice(
        store,
        CompactionNotice(
            state="done", compacted=n, tokens_before=done.tokens_before, tokens_after=done.tokens_after
        ),
    )
    return "compacted"


def _failed(store: SessionStore, reason: str) -> str:
    store.append(FullCompactionCancel(reason=reason[:500]))
    _notice(store, CompactionNotice(state="failed", detail=FAILED_KEPT_TEXT.format(reason=reason)))
    log.warning("manual compaction of %s failed: %s", store.key, reason)
    return "failed"


def _request_overhead() -> int:
    tools = tool_setup()
    return estimate_text(tools.system_prompt) + estimate_text(json.dumps(tools.declarations))


def _notice(store: SessionStore, notice: CompactionNotice) -> None:
    store.post_notice(notice)
    schedule_delivery(store.redis, store.key)
