"""A model step as the thread sees it while it runs: its text so far and its tool calls.

The turn writes each step's `LiveStep` to the session's live hash as the model writes it
(throttled by jobs.turn.live); the step's first write also adds a `LiveNotice` to the outbox,
which places the step's stream in the thread. The delivery job reads the newest record when it
reaches that entry (gateway.delivery.streams) and removes it once the stream is complete.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from jobs.keys import NOTICE_FIELD, live_key
from jobs.lua import lua
from jobs.session.notices import LiveNotice
from jobs.session.store import SessionStore

# Slack's task_update statuses; a call whose outcome is unknown shows as an error saying so.
TaskStatus = Literal["pending", "in_progress", "complete", "error"]
ENTRY_SUFFIX = "#at"

# Replace the step's record; the step's first write adds its outbox entry (ARGV[3], the marker).
_PUBLISH = f"""
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if redis.call('HSETNX', KEYS[1], ARGV[1] .. '{ENTRY_SUFFIX}', '-') == 1 then
  local at = redis.call('XADD', KEYS[2], '*', '{NOTICE_FIELD}', ARGV[3])
  redis.call('HSET', KEYS[1], ARGV[1] .. '{ENTRY_SUFFIX}', at)
end
"""


class LiveTask(BaseModel):
    """One tool call of the step, as a task of the stream's timeline."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    status: TaskStatus = "pending"
    details: str | None = None  # the argument summary, safe to show
    output: str | None = None  # why it failed, or that its outcome is unknown


class LiveStep(BaseModel):
    """`attempt` grows when the model is asked the step again (its text starts over); `done`
    once nothing will change; `final` when the step answered (no tool calls)."""

    turn_id: str
    step: int
    attempt: int = 0
    text: str = ""
    tasks: list[LiveTask] = Field(default_factory=list)
    done: bool = False
    final: bool = False


def live_field(turn_id: str, step: int) -> str:
    return f"{turn_id}:{step}"


def publish(store: SessionStore, record: LiveStep) -> None:
    """One round trip: the record, and the step's outbox entry the first time."""
    marker = LiveNotice(turn_id=record.turn_id, step=record.step).model_dump_json()
    keys = [live_key(store.key), store.outbox_key]
    lua(store.redis, _PUBLISH)(
        keys=keys, args=[live_field(record.turn_id, record.step), record.model_dump_json(), marker]
    )


def read(store: SessionStore, turn_id: str, step: int) -> LiveStep | None:
    raw = store.redis.hget(live_key(store.key), live_field(turn_id, step))
    return LiveStep.model_validate_json(raw) if raw else None


def forget(store: SessionStore, turn_id: str, step: int) -> None:
    """The stream is complete: the text is in the thread (and on the wire); the entry mark stays,
    so a late write cannot place the step again."""
    store.redis.hdel(live_key(store.key), live_field(turn_id, step))
