"""Finds turns whose worker died, and stops turns that ignore a cancel.

A running turn renews its lease every few seconds; when a worker is killed the lease expires
within `LEASE_TTL_MS`. Each sweep (every `JANITOR_EVERY_S`, from every worker process, one at
a time) marks such a session `interrupted`, records the interruption on the wire log, and
posts one notice per tool call whose result was never recorded. Nothing is re-run: the
people in the thread decide with `!resume`. Input left waiting in the inbox of a lease that
expired goes onto the wire and queues its turn.

A worker killed after taking a turn job off the queue but before taking the lease ran
nothing: that session stays `queued` with no job on its way. So does a web process killed
between a mention's claim of the turn and its enqueue (jobs.input), or whose enqueue failed. A
sweep queues its turn again once the session has been `queued` for a lease TTL with neither a
lease nor a waiting job. That grace is far longer than a live process takes from the claim to
the enqueue (milliseconds); one slower still only enqueues a second job, which finds the
session leased or nothing to answer (jobs.queues.schedule_turn).
"""

from __future__ import annotations

import logging
import time
from typing import Literal

from redis import Redis

from agent.loop.turn_loop import ABANDONED
from agent.wire import AppendLoopEvent, StepEnd, TurnEnded
from jobs import metrics, runtime
from jobs.control import cancel_requested_by, wake_the_turn
from jobs.delegation.endings import child_lost
from jobs.keys import (
    JANITOR_LOCK,
    QUEUED_SESSIONS,
    RUNNING_SESSIONS,
    SessionKey,
    cancel_key,
    unknown_result_notice_key,
)
from jobs.log_context import bound, session_fields
from jobs.queues import clear_turn_flag, schedule_delivery, schedule_turn, turn_job_waiting
from jobs.redis_text import text
from jobs.session.history import load_fold
from jobs.session.lease import revoke
from jobs.session.notices import CancelledNotice, InfoNotice, ProgressNotice, UnknownResultNotice
from jobs.session.reactions import mark_ended
from jobs.session.state import PARKED_STATES, set_state, state_of
from jobs.session.store import UNLEASED, SessionStore, now_ms
from jobs.turn.summaries import short_arguments

log = logging.getLogger(__name__)

JANITOR_EVERY_S = 10  # with the 20 s lease, a dead worker is noticed within 30 s
CANCEL_RESEND_S = 2  # a cancel still unheard this long after it was asked is published again
CANCEL_BACKSTOP_S = 15  # a turn still running this long after a cancel loses its lease
INTERRUPTED_TEXT = (
    "The worker running this turn stopped unexpectedly. Nothing was re-run; "
    "`!resume` continues with the unknown results marked as such."
)


def sweep(redis: Redis, every_s: float = JANITOR_EVERY_S, *, at_ms: int | None = None) -> list[SessionKey]:
    """One pass; returns the sessions it marked interrupted (or cancelled). `at_ms` is the time
    the sweep judges ages by (epoch ms, now by default): a test sets it past a grace instead of
    waiting the grace out."""
    if not redis.set(JANITOR_LOCK, "1", nx=True, px=int(every_s * 1000)):
        return []
    at_ms = now_ms() if at_ms is None else at_ms
    marked = []
    for member in redis.smembers(RUNNING_SESSIONS):
        key = SessionKey.parse(text(member))
        with bound(**session_fields(key)):
            if _sweep_running(SessionStore(redis, key), member, at_ms):
                marked.append(key)
    _requeue_lost_turns(redis, at_ms)
    return marked


def _sweep_running(store: SessionStore, member: bytes | str, at_ms: int) -> bool:
    """A session that took a lease: True when its turn's worker died mid-turn and it was marked."""
    if store.redis.exists(store.lease_key) and not _pressed_an_ignored_cancel(store, at_ms):
        return False
    store.redis.srem(RUNNING_SESSIONS, member)
    running = state_of(store) == "running"
    if running:
        mark_interrupted(store)
    _queue_waiting_input(store)
    return running


def _queue_waiting_input(store: SessionStore) -> None:
    """Input that waited for a holder that died goes onto the wire, and starts its turn."""
    if store.take_inbox(UNLEASED) and state_of(store) not in PARKED_STATES:
        schedule_turn(store.redis, store.key, turn_timeout_s=runtime.settings().TURN_TIMEOUT_SECONDS)


def _requeue_lost_turns(redis: Redis, at_ms: int) -> None:
    settings = runtime.settings()
    for member in redis.smembers(QUEUED_SESSIONS):
        store = SessionStore(redis, SessionKey.parse(text(member)))
        meta = store.meta.read()
        if meta.state != "queued":
            redis.srem(QUEUED_SESSIONS, member)
        elif _turn_lost(store, at_ms - (meta.updated or 0), settings.LEASE_TTL_SECONDS):
            with bound(**session_fields(store.key)):
                log.warning("session %s: its queued turn job was lost; queued it again", store.key)
                clear_turn_flag(redis, store.key)
                schedule_turn(redis, store.key, turn_timeout_s=settings.TURN_TIMEOUT_SECONDS)


def _turn_lost(store: SessionStore, queued_for_ms: int, lease_ttl_s: float) -> bool:
    """Queued for a lease TTL, yet no job holds the session or waits on the queue for it."""
    if queued_for_ms < lease_ttl_s * 1000 or store.redis.exists(store.lease_key):
        return False
    return not turn_job_waiting(store.redis, store.key)


def mark_interrupted(store: SessionStore) -> None:
    meta = store.meta.read()
    turn_id = "unknown" if meta.turn_id is None else meta.turn_id
    with bound(turn=meta.turn_id, job=meta.job):
        _interrupt(store, turn_id)


def _interrupt(store: SessionStore, turn_id: str) -> None:
    folder = load_fold(store)
    for call in folder.pending_calls():
        _notice_once(store, call.id, UnknownResultNotice(
            turn_id=turn_id, tool_call_id=call.id, tool_name=call.name,
            summary=short_arguments(call.name, call.arguments),
        ))  # fmt: skip
    if folder.open_step_uuid is not None:
        end = AppendLoopEvent(event=StepEnd(uuid=folder.open_step_uuid, finish_reason=ABANDONED))
        store.append(end, once_key=f"janitor:{folder.open_step_uuid}:end")
    cancelled_by = cancel_requested_by(store.redis, store.key)
    reason: Literal["cancelled", "interrupted"] = "cancelled" if cancelled_by else "interrupted"
    store.append(TurnEnded(turn_id=turn_id, reason=reason), once_key=f"{turn_id}:ended")
    _close_card(store, turn_id, "cancelled" if cancelled_by else "interrupted")
    if cancelled_by:
        store.redis.delete(cancel_key(store.key))
        store.post_notice(
            CancelledNotice(turn_id=turn_id, by=cancelled_by, text=f"Stopped by <@{cancelled_by}>.")
        )
    else:
        store.post_notice(InfoNotice(turn_id=turn_id, text=INTERRUPTED_TEXT))
    mark_ended(store, reason)
    set_state(store, reason, last_turn_reason=reason)
    schedule_delivery(store.redis, store.key)
    child_lost(store, turn_timeout_s=runtime.settings().TURN_TIMEOUT_SECONDS)  # its parent must not wait on
    log.warning("session %s: turn %s %s (worker gone)", store.key, turn_id, reason)


def _notice_once(store: SessionStore, tool_call_id: str, notice: UnknownResultNotice) -> None:
    if store.redis.set(unknown_result_notice_key(store.key, tool_call_id), "1", nx=True, ex=7 * 24 * 3600):
        store.post_notice(notice)
        metrics.UNKNOWN_RESULTS.inc()


def _close_card(store: SessionStore, turn_id: str, state: str) -> None:
    """Show the turn's last progress card in its final state; running tools become unknown."""
    snapshot = store.card_snapshot(turn_id)
    if snapshot is None:
        return
    _, card = snapshot
    tools = [
        line.model_copy(update={"state": "unknown"}) if line.state == "running" else line
        for line in card.tools
    ]
    final = card.model_copy(update={"state": state, "tools": tools, "updated_at": time.time()})
    store.post_notice(ProgressNotice(turn_id=turn_id, card=final))


def _pressed_an_ignored_cancel(store: SessionStore, at_ms: int) -> bool:
    """A turn still running CANCEL_RESEND_S after a cancel may have missed its wake-up (its
    process was resubscribing): publish it again. One still holding its lease
    CANCEL_BACKSTOP_S after is not hearing it (its loop is stuck): take its lease, so it writes
    nothing more once it wakes, and end the session here, as cancelled (True). No RQ command:
    a thread-based worker ignores RQ's stop-job."""
    meta = store.meta.read()
    asked_at = meta.cancel_at or 0
    waited_ms = at_ms - asked_at
    if not asked_at or waited_ms < CANCEL_RESEND_S * 1000:
        return False
    if waited_ms < CANCEL_BACKSTOP_S * 1000:
        log.info("session %s: still running %.1f s after a cancel; woken again", store.key, waited_ms / 1000)
        wake_the_turn(store.redis, store.key)
        return False
    holder = store.redis.get(store.lease_key)
    if not cancel_requested_by(store.redis, store.key) or holder is None or not revoke(store, text(holder)):
        return False
    store.meta.clear_cancel_asked()
    log.warning(
        "session %s: its turn (job %s) did not stop %d s after a cancel; took its lease",
        store.key,
        meta.job,
        CANCEL_BACKSTOP_S,
    )
    return True
