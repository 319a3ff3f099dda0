"""What people can do to a session from Slack: cancel, resume, compact, approve, ask for status.

Each action answers with a `ControlResult` whose message the gateway shows the person (an
ephemeral reply); the thread itself hears of it through notices. Who may act is the gateway's
decision; these functions only record who did.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field
from redis import Redis
from rq.job import Job

from agent.tools import texts
from agent.wire import AppendLoopEvent, StepEnd, ToolResultEvent, ToolResultPayload, TurnCancel, TurnEnded
from jobs import metrics, runtime
from jobs.delegation.child_approvals import approval_route
from jobs.delegation.children import active_children, child_info, forget_child
from jobs.delegation.tree_cards import close_card
from jobs.delegation.waits import StepWaits
from jobs.input import record_input
from jobs.keys import CANCELS_CHANNEL, SessionKey, cancel_key, turn_queued_key
from jobs.queues import (
    COMPACTION_JOB,
    SERIALIZER,
    TURNS_QUEUE,
    queue,
    queue_turn,
    schedule_delivery,
    turn_job_id,
)
from jobs.quotas import Quota, claim_working, sessions_working, spent_budget
from jobs.redis_text import text
from jobs.session.approvals import ApprovalStore, Decision, waited_text
from jobs.session.feedback import Feedback, all_feedback
from jobs.session.history import load_fold
from jobs.session.notices import ApprovalDecidedNotice, CancelledNotice, InfoNotice
from jobs.session.state import PARKED_STATES, STOPPED_STATES, session_exists, set_state, state_of
from jobs.session.store import SessionStore, now_ms
from jobs.session.user_input import UserInput
from jobs.usage import Prices, session_usage

log = logging.getLogger(__name__)

CANCEL_FLAG_TTL_S = 3600


class ControlResult(BaseModel):
    ok: bool
    message: str


class SessionStatus(BaseModel):
    exists: bool
    state: str
    owner: str | None = None
    last_turn_reason: str | None = None
    waiting_inputs: int = 0
    pending_approvals: int = 0
    usage: str | None = None  # what the session's model calls cost (jobs.usage), None before any
    feedback: list[Feedback] = Field(default_factory=list)  # 👍/👎 on answers, oldest first


def cancel_requested_by(redis: Redis, key: SessionKey) -> str | None:
    value = redis.get(cancel_key(key))
    return text(value) if value else None


def submit_input(redis: Redis, key: SessionKey, user_input: UserInput, *, turn_timeout_s: int) -> str:
    """A person spoke in the thread: record it, and schedule a turn unless one is running.

    A parked session (approval, sub-agents) goes on when that ends, not on new input.
    """
    recorded = record_input(redis, key, user_input, turn_timeout_s=turn_timeout_s, parked=PARKED_STATES)
    assert isinstance(recorded, str)  # no quotas given: none refuses
    return recorded


def status(redis: Redis, key: SessionKey, priced: Prices | None = None) -> SessionStatus:
    store = SessionStore(redis, key)
    meta = store.meta.read()
    spent = session_usage(redis, key)
    return SessionStatus(
        exists=session_exists(redis, key),
        state=meta.state,
        owner=meta.owner,
        last_turn_reason=meta.last_turn_reason,
        waiting_inputs=int(redis.llen(store.inbox_key)),
        pending_approvals=len(ApprovalStore(store).pending()),
        usage=spent.describe(priced) if spent.steps else None,
        feedback=all_feedback(redis, key),
    )


def cancel(redis: Redis, key: SessionKey, *, by: str) -> ControlResult:
    """Stop the session's turn, and every sub-agent it started (theirs too, all the way down)."""
    for child in active_children(redis, key):
        cancel(redis, child, by=by)
        forget_child(redis, key, child)  # stopped: nothing is left to wait for or to cancel again
    store = SessionStore(redis, key)
    state = state_of(store)
    log.info("cancel of %s by %s: the session is %s", key, by, state)
    if state == "running":
        redis.set(cancel_key(key), by, ex=CANCEL_FLAG_TTL_S)
        store.meta.note_cancel_asked(now_ms())
        wake_the_turn(redis, key)
        return ControlResult(ok=True, message="Stopping the running turn; tools get 2 seconds to finish.")
    if state == "queued":
        return _cancel_queued(store, by)
    if state == "awaiting_approval":
        return _cancel_parked(store, by)
    if state == "awaiting_agents":
        return _cancel_waiting(store, by)
    return ControlResult(ok=False, message="Nothing is running in that thread.")


def wake_the_turn(redis: Redis, key: SessionKey) -> None:
    """Tell the process running `key`'s turn that its cancel flag is set (jobs.turn.cancels)."""
    redis.publish(CANCELS_CHANNEL, str(key))


def _cancel_queued(store: SessionStore, by: str) -> ControlResult:
    redis, key = store.redis, store.key
    # If the job starts before it is removed, it finds this flag and stops at once.
    redis.set(cancel_key(key), by, ex=CANCEL_FLAG_TTL_S)
    token = redis.getdel(turn_queued_key(key))
    job_id = turn_job_id(text(token)) if token is not None else None
    if job_id is not None and queue(redis, TURNS_QUEUE).remove(job_id):
        Job.fetch(job_id, connection=redis, serializer=SERIALIZER).delete()
        redis.delete(cancel_key(key))
        _record_cancelled(store, by, target="queued")
    return ControlResult(ok=True, message="Cancelled the queued turn before it started.")


def _cancel_parked(store: SessionStore, by: str) -> ControlResult:
    approvals = ApprovalStore(store)
    parked = approvals.pending()
    for approval in parked:
        if approvals.decide(approval.approval_id, "cancelled", by):
            metrics.approval_decided("cancelled", approval.waited_s())
            store.post_notice(
                ApprovalDecidedNotice(approval_id=approval.approval_id, decision="cancelled", by=by)
            )
    settle_parked_step(store, reason="cancelled")
    _record_cancelled(store, by, target="active")
    return ControlResult(ok=True, message="Cancelled; the calls waiting for approval were not run.")


def _cancel_waiting(store: SessionStore, by: str) -> ControlResult:
    """A turn parked on its sub-agents: they were stopped above; its waiting calls are closed."""
    StepWaits(store).settle_cancelled(load_fold(store).pending_calls(), reason="cancelled")
    close_card(store, "cancelled")
    _record_cancelled(store, by, target="active")
    return ControlResult(ok=True, message="Stopped the turn and its sub-agents.")


def settle_parked_step(store: SessionStore, reason: str) -> None:
    """Close a parked step: every call that never ran gets the approval-cancelled result."""
    approvals = ApprovalStore(store)
    requests = approvals.requests()
    for approval in requests:
        store.append(
            AppendLoopEvent(
                event=ToolResultEvent(
                    tool_call_id=approval.tool_call_id,
                    result=ToolResultPayload(
                        output=texts.approval_cancelled(approval.tool_name), is_error=True
                    ),
                )
            ),
            once_key=f"parked:{approval.step_uuid}:{approval.tool_call_id}:result",
        )
    if requests:
        step = requests[0].step_uuid
        store.append(
            AppendLoopEvent(event=StepEnd(uuid=step, finish_reason=reason)), once_key=f"parked:{step}:end"
        )
    approvals.clear()


def _record_cancelled(store: SessionStore, by: str, *, target: Literal["active", "queued"]) -> None:
    recorded = store.meta.read().turn_id
    turn_id = "queued" if recorded is None else recorded
    store.append(TurnCancel(turn_id=turn_id, target=target, reason="user_cancelled"))
    store.append(TurnEnded(turn_id=turn_id, reason="cancelled"))
    set_state(store, "cancelled", last_turn_reason="cancelled")
    store.post_notice(CancelledNotice(turn_id=turn_id, by=by, text=f"Stopped by <@{by}>."))
    schedule_delivery(store.redis, store.key)


def resume(
    redis: Redis,
    key: SessionKey,
    *,
    by: str,
    turn_timeout_s: int,
    working: Quota | None = None,
    budgets: Sequence[Quota] = (),
) -> ControlResult:
    """Queue the next turn of a stopped session. A resumed turn is a new turn, so the limits of
    one hold for `by`: it is refused once a daily budget is spent (`budgets`,
    jobs.quotas.budget_quotas) or when `by` has as many sessions working as `working` allows
    (jobs.quotas.working_quota), and otherwise counts among them."""
    spent = spent_budget(redis, budgets)
    if spent is not None:
        return ControlResult(ok=False, message=spent.refusal)
    store = SessionStore(redis, key)
    state = state_of(store)
    if state in ("running", "queued"):
        return ControlResult(ok=False, message="That thread's turn is already running.")
    if state == "awaiting_approval":
        return ControlResult(
            ok=False, message="That thread is waiting for an approval: approve or deny the call."
        )
    if state == "awaiting_agents":
        return ControlResult(ok=False, message="That thread is waiting for its sub-agents to answer.")
    if state not in STOPPED_STATES:
        return ControlResult(
            ok=False, message="Nothing to resume: the last turn finished. Reply in the thread."
        )
    if working is not None and not claim_working(redis, working, key, now_ms()):
        return ControlResult(ok=False, message=_not_resumed(working.limit))
    redis.delete(cancel_key(key))
    store.meta.request_resume(by)
    queue_turn(store, turn_timeout_s=turn_timeout_s)
    store.post_notice(InfoNotice(text=f"Resumed by <@{by}>. Nothing that was interrupted is re-run."))
    schedule_delivery(redis, key)
    return ControlResult(
        ok=True, message="Resumed: the agent continues with the unknown results marked as such."
    )


def _not_resumed(limit: int) -> str:
    return (
        f"Not resumed: you already have {sessions_working(limit)}. Resume this one when one of them"
        " has ended, or stop one with `!stop` in its thread."
    )


def decide_approval(
    redis: Redis, key: SessionKey, approval_id: str, decision: Decision, *, by: str, turn_timeout_s: int
) -> ControlResult:
    store = SessionStore(redis, key)
    approvals = ApprovalStore(store)
    approval = approvals.get(approval_id)
    if approval is None and (child := approval_route(redis, key, approval_id)) is not None:
        return _decide_routed(store, child, approval_id, decision, by=by, turn_timeout_s=turn_timeout_s)
    if approval is None or not approvals.decide(approval_id, decision, by):
        return ControlResult(ok=False, message="That request was already decided.")
    metrics.approval_decided(decision, approval.waited_s())
    store.post_notice(ApprovalDecidedNotice(approval_id=approval_id, decision=decision, by=by))
    schedule_delivery(redis, key)
    _continue_when_decided(store, approvals, turn_timeout_s)
    verb = "Approved" if decision == "approved" else "Denied"
    return ControlResult(ok=True, message=f"{verb} `{approval.tool_name}`.")


def _continue_when_decided(store: SessionStore, approvals: ApprovalStore, turn_timeout_s: int) -> None:
    """The last decision of a parked step queues the turn that runs (or skips) its calls."""
    if not approvals.pending():
        queue_turn(store, turn_timeout_s=turn_timeout_s)


def expire_approvals(session_key: str, step_uuid: str, after_s: float) -> str:
    """RQ job, due once the calls parked at `step_uuid` have waited `after_s`: each one nobody
    decided is denied, its card says so and the thread gets a note; the turn then goes on."""
    store = SessionStore(runtime.redis_client(), SessionKey.parse(session_key))
    approvals = ApprovalStore(store)
    waiting = [a for a in approvals.pending() if a.step_uuid == step_uuid]
    expired = [a for a in waiting if approvals.decide(a.approval_id, "expired", "")]
    if not expired:
        return "nothing to expire: decided or cancelled in time"
    info = child_info(store)
    thread = store if info is None else SessionStore(store.redis, info.root)
    cards = [store] if info is None else [store, thread]  # a sub-agent's card is in its root's thread
    for approval in expired:
        metrics.approval_decided("expired", approval.waited_s())
        for card in cards:
            card.post_notice(ApprovalDecidedNotice(approval_id=approval.approval_id, decision="expired"))
        waited = waited_text(after_s)
        thread.post_notice(
            InfoNotice(
                text=f"Nobody approved `{approval.tool_name}` within {waited}, so it was denied and not run."
            )
        )
    for card in cards:
        schedule_delivery(store.redis, card.key)
    _continue_when_decided(store, approvals, runtime.settings().TURN_TIMEOUT_SECONDS)
    return f"expired {len(expired)}"


def _decide_routed(
    store: SessionStore,
    child: SessionKey,
    approval_id: str,
    decision: Decision,
    *,
    by: str,
    turn_timeout_s: int,
) -> ControlResult:
    """A sub-agent's request shown in this thread: decided in the sub-agent, shown here."""
    result = decide_approval(store.redis, child, approval_id, decision, by=by, turn_timeout_s=turn_timeout_s)
    if result.ok:
        store.post_notice(ApprovalDecidedNotice(approval_id=approval_id, decision=decision, by=by))
        schedule_delivery(store.redis, store.key)
    return result


def request_compaction(redis: Redis, key: SessionKey, *, by: str, turn_timeout_s: int) -> ControlResult:
    store = SessionStore(redis, key)
    if not session_exists(redis, key):
        return ControlResult(ok=False, message="There is no session in that thread.")
    if state_of(store) in ("running", "queued", *PARKED_STATES):
        # A parked step is open (calls waiting for a person or for sub-agents): the checkpoint
        # keeps only settled history, so compacting now would drop the step and its results.
        return ControlResult(
            ok=False, message="Cannot compact while a turn is active. Wait for it to finish, then retry."
        )
    queue(redis, TURNS_QUEUE).enqueue(COMPACTION_JOB, str(key), by, job_timeout=turn_timeout_s, result_ttl=0)
    return ControlResult(ok=True, message="Compacting the conversation; the thread will say when it is done.")
