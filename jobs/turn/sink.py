"""The loop's sink on Redis: idempotent wire appends, inbox → wire, parking, projection repairs
on the session's record, and each step's model usage counted (jobs.usage) as its step.begin is
written.

It runs on the event loop every turn of the process shares, so nothing here may block it: the
per-step writes (wire, inbox, usage) go through the asyncio client (jobs.aio_redis); the rare
ones (parking, a checkpoint after a compaction, a repair's note, files shared with a message)
keep their synchronous code and run in the tools lane (agent.offload). `record_blocking` is for
callers already off the loop (a turn's synchronous start)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel
from redis.asyncio import Redis as AsyncRedis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from agent.loop.ports import ParkedCall
from agent.messages import Message
from agent.offload import in_thread
from agent.projection.report import ProjectionRepair
from jobs.aio_redis import aio_twin
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

    async def record(self, record: BaseModel, once_key: str) -> str:
        return (await self.record_all([(record, once_key)]))[0]

    async def record_all(self, records: Sequence[tuple[BaseModel, str]]) -> list[str]:
        aio = aio_twin(self.store.redis)
        record_ids = await self._retried(lambda: self.store.append_all_on(aio, records), records[0][1])
        for record, once_key in records:
            await self._count(aio, record, once_key)
        return record_ids

    async def _count(self, aio: AsyncRedis, record: BaseModel, once_key: str) -> None:
        counted = self._usage_of(record, once_key)
        if counted is not None:
            meter, (counted_as, usage) = counted
            await self._retried(lambda: meter.count_on(aio, counted_as, usage), f"the usage of {counted_as}")

    def record_blocking(self, record: BaseModel, once_key: str) -> str:
        """`record`, for a caller off the event loop."""
        self._refuse_in_doubt()
        record_id = _retried_blocking(lambda: self.store.append(record, once_key=once_key), once_key)
        counted = self._usage_of(record, once_key)
        if counted is not None:
            meter, (counted_as, usage) = counted
            _retried_blocking(lambda: meter.count(counted_as, usage), f"the usage of {counted_as}")
        return record_id

    def _usage_of(self, record: BaseModel, once_key: str) -> tuple[UsageMeter, tuple[str, Any]] | None:
        """What a model call cost (a step.begin's, a compaction's), counted once (jobs.usage)."""
        counted = usage_to_count(record, once_key)
        if self.meter is None or counted is None:
            return None
        return self.meter, counted

    async def take_input(self) -> list[tuple[Message, str]]:
        """Inbox → wire in one step fenced by this turn's lease (SessionStore.take_inbox); a
        message that shared files is followed by what became of them (jobs.turn.attachments)."""
        token = self.lease.token if self.lease is not None else UNFENCED
        aio = aio_twin(self.store.redis)
        arrived = await self._retried(lambda: self.store.take_inbox_on(aio, token), "the inbox")
        if self.attachments is None or not arrived:
            return arrived
        return await in_thread(self.attachments.after, arrived, self.record_blocking)

    async def _retried(self, write: Callable[[], Awaitable[T]], what: str) -> T:
        """Run an idempotent write, again after a lost connection: written once either way."""
        self._refuse_in_doubt()
        for attempt in range(1, APPEND_ATTEMPTS + 1):
            try:
                return await write()
            except (RedisConnectionError, RedisTimeoutError):
                if attempt == APPEND_ATTEMPTS:
                    raise
                log.warning("writing %s failed; retrying", what)
                await asyncio.sleep(APPEND_RETRY_S * attempt)
        raise AssertionError("unreachable")

    def _refuse_in_doubt(self) -> None:
        if self.lease is not None and self.lease.in_doubt():
            raise LeaseLost(f"{self.store.key}: another worker owns the session now")

    async def compacted(self, history: list[Message], through: str) -> None:
        self._refuse_in_doubt()
        await in_thread(save_checkpoint, self.store, history, through)

    async def repaired(self, step: int, repair: ProjectionRepair) -> None:
        """On the session's record once per distinct repair; a diagnostic, so a Redis error is
        logged and the turn goes on."""
        try:
            await in_thread(record_repairs, self.store, self.turn_id, step, repair.call_ids_by_kind)
        except RedisError:
            log.warning("could not record a projection repair of step %d", step, exc_info=True)

    async def park(self, step_uuid: str, calls: list[ParkedCall]) -> None:
        self._refuse_in_doubt()
        await in_thread(self._park, step_uuid, calls)

    def _park(self, step_uuid: str, calls: list[ParkedCall]) -> None:
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


def _retried_blocking(write: Callable[[], T], what: str) -> T:
    """`RedisTurnSink._retried`, off the event loop."""
    for attempt in range(1, APPEND_ATTEMPTS + 1):
        try:
            return write()
        except (RedisConnectionError, RedisTimeoutError):
            if attempt == APPEND_ATTEMPTS:
                raise
            log.warning("writing %s failed; retrying", what)
            time.sleep(APPEND_RETRY_S * attempt)
    raise AssertionError("unreachable")
