"""The loop's sink on Redis: idempotent wire appends, inbox → wire, cancel flag, parking,
projection repairs on the session's record, and each step's model usage counted (jobs.usage)
as its step.begin is written."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from agent.loop.ports import ParkedCall
from agent.messages import Message
from agent.projection.report import ProjectionRepair
from jobs.keys import cancel_key
from jobs.queues import schedule_approval_expiry, schedule_delivery
from jobs.session.approvals import DEFAULT_APPROVAL_TIMEOUT_S, Approval, ApprovalStore
from jobs.session.history import save_checkpoint
from jobs.session.lease import Lease, LeaseLost
from jobs.session.notices import ApprovalRequestNotice
from jobs.session.repairs import record_repairs
from jobs.session.store import UNFENCED, SessionStore
from jobs.turn.attachments import Attachments
from jobs.turn.summaries import full_arguments, short_arguments
from jobs.usage import UsageMeter, usage_to_count

log = logging.getLogger(__name__)
T = TypeVar("T")

APPEND_ATTEMPTS = 3  # an append whose answer was lost is retried with its key: written once either way
APPEND_RETRY_S = 0.5


class RedisTurnSink:
    def __init__(
        self,
        store: SessionStore,
        turn_id: str,
        lease: Lease | None = None,
        approval_timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S,
        meter: UsageMeter | None = None,
        attachments: Attachments | None = None,
    ) -> None:
        self.store = store
        self.turn_id = turn_id
        self.lease = lease
        self.approval_timeout_s = approval_timeout_s
        self.meter = meter
        self.attachments = attachments

    def record(self, record: BaseModel, once_key: str) -> str:
        record_id = self._retried(lambda: self.store.append(record, once_key=once_key), once_key)
        self._count_usage(record, once_key)
        return record_id

    def _count_usage(self, record: BaseModel, once_key: str) -> None:
        """What a model call cost (a step.begin's, a compaction's), counted once (jobs.usage)."""
        counted = usage_to_count(record, once_key)
        if self.meter is None or counted is None:
            return
        meter, (counted_as, usage) = self.meter, counted
        self._retried(lambda: meter.count(counted_as, usage), f"the usage of {counted_as}")

    def take_input(self) -> list[tuple[Message, str]]:
        """Inbox → wire in one step fenced by this turn's lease (SessionStore.take_inbox); a
        message that shared files is followed by what became of them (jobs.turn.attachments)."""
        token = self.lease.token if self.lease is not None else UNFENCED
        arrived = self._retried(lambda: self.store.take_inbox(token), "the inbox")
        if self.attachments is None:
            return arrived
        return self.attachments.after(arrived, self.record)

    def _retried(self, write: Callable[[], T], what: str) -> T:
        """Run an idempotent write, again after a lost connection: written once either way."""
        if self.lease is not None and self.lease.in_doubt():
            raise LeaseLost(f"{self.store.key}: another worker owns the session now")
        for attempt in range(1, APPEND_ATTEMPTS + 1):
            try:
                return write()
            except (RedisConnectionError, RedisTimeoutError):
                if attempt == APPEND_ATTEMPTS:
                    raise
                log.warning("writing %s failed; retrying", what)
                time.sleep(APPEND_RETRY_S * attempt)
        raise AssertionError("unreachable")

    def cancel_requested(self) -> bool:
        """A Stop, or a lease in doubt: its tools must stop before another worker may take over."""
        if self.lease is not None and self.lease.in_doubt():
            return True
        return bool(self.store.redis.exists(cancel_key(self.store.key)))

    def compacted(self, history: list[Message], through: str) -> None:
        save_checkpoint(self.store, history, through)

    def repaired(self, step: int, repair: ProjectionRepair) -> None:
        """On the session's record once per distinct repair; a diagnostic, so a Redis error is
        logged and the turn goes on."""
        try:
            record_repairs(self.store, self.turn_id, step, repair.call_ids_by_kind)
        except RedisError:
            log.warning("could not record a projection repair of step %d", step, exc_info=True)

    def park(self, step_uuid: str, calls: list[ParkedCall]) -> None:
        asked_at = time.time()
        approvals = [
            Approval(
                approval_id=f"{step_uuid}:{parked.call.id}",
                tool_call_id=parked.call.id,
                tool_name=parked.call.name,
                summary=short_arguments(parked.call.name, parked.call.arguments),
                details=full_arguments(parked.call.name, parked.call.arguments),
                reason=parked.reason,
                step_uuid=step_uuid,
                turn_id=self.turn_id,
                asked_at=asked_at,
            )
            for parked in calls
        ]
        ApprovalStore(self.store).park(approvals)
        self.store.meta.park_step(step_uuid)
        schedule_approval_expiry(self.store.redis, self.store.key, step_uuid, self.approval_timeout_s)
        for approval in approvals:
            self.store.post_notice(
                ApprovalRequestNotice(
                    turn_id=self.turn_id,
                    approval_id=approval.approval_id,
                    tool_call_id=approval.tool_call_id,
                    tool_name=approval.tool_name,
                    summary=approval.summary,
                    details=approval.details,
                    reason=approval.reason,
                )
            )
        schedule_delivery(self.store.redis, self.store.key)
