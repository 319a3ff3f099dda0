"""A session's meta hash, typed: its state, who started it, the turn that runs, what waits.

`SessionMeta` is one read of the hash; `MetaHash` reads it and changes it one named fact at a
time, so no caller spells a field name or touches the hash directly (the field names are
`jobs.keys.MetaField`). The one other writer is the intake script (jobs/input.lua), which
has the names spelled in from `MetaField` when its text is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from redis import Redis
from redis.client import Pipeline
from redis.typing import EncodableT, FieldT

from jobs.keys import MetaField, SessionKey, meta_key
from jobs.redis_text import text_map
from jobs.session.touched import note_touched

State = Literal[
    "idle", "queued", "running", "awaiting_approval", "awaiting_agents", "cancelled", "interrupted", "failed"
]

_SUB_FIELDS = frozenset(value for name, value in vars(MetaField).items() if name.startswith("SUB_"))


class SessionMeta(BaseModel):
    """The meta hash as read. A field Redis does not have reads as its default here.

    Each attribute is read from the hash field its `MetaField` constant names (the same word).
    """

    model_config = ConfigDict(frozen=True)

    state: State = Field("idle", validation_alias=MetaField.STATE)
    updated: int | None = Field(None, validation_alias=MetaField.UPDATED)
    created: int | None = Field(None, validation_alias=MetaField.CREATED)
    owner: str | None = Field(None, validation_alias=MetaField.OWNER)
    turn_id: str | None = Field(None, validation_alias=MetaField.TURN_ID)
    job: str | None = Field(None, validation_alias=MetaField.JOB)
    last_turn_reason: str | None = Field(None, validation_alias=MetaField.LAST_TURN_REASON)
    parked_step: str | None = Field(None, validation_alias=MetaField.PARKED_STEP)
    resume_requested: str | None = Field(None, validation_alias=MetaField.RESUME_REQUESTED)
    cancel_at: int | None = Field(None, validation_alias=MetaField.CANCEL_AT)
    delivered: str | None = Field(None, validation_alias=MetaField.DELIVERED)
    workspace: str | None = Field(None, validation_alias=MetaField.WORKSPACE)
    sub_parent: str | None = Field(None, validation_alias=MetaField.SUB_PARENT)
    sub_root: str | None = Field(None, validation_alias=MetaField.SUB_ROOT)
    sub_depth: str | None = Field(None, validation_alias=MetaField.SUB_DEPTH)
    sub_agent_id: str | None = Field(None, validation_alias=MetaField.SUB_AGENT_ID)
    sub_call_id: str | None = Field(None, validation_alias=MetaField.SUB_CALL_ID)
    sub_mode: str | None = Field(None, validation_alias=MetaField.SUB_MODE)
    sub_description: str | None = Field(None, validation_alias=MetaField.SUB_DESCRIPTION)
    sub_profile: str | None = Field(None, validation_alias=MetaField.SUB_PROFILE)
    sub_item: str | None = Field(None, validation_alias=MetaField.SUB_ITEM)

    @field_validator("updated", "created", "cancel_at", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return None if value == "" else value


class MetaHash:
    """The meta hash of one session."""

    def __init__(self, redis: Redis, key: SessionKey) -> None:
        self.redis = redis
        self.session = key
        self.key = meta_key(key)

    def read(self) -> SessionMeta:
        return SessionMeta.model_validate(self.raw())

    def raw(self) -> dict[str, str]:
        """The hash as it is, field → value (for tools and tests that look at Redis itself)."""
        return text_map(self.redis.hgetall(self.key))

    @staticmethod
    def read_touch(pipe: Pipeline, key: SessionKey) -> None:
        """Queue a read of the state, `updated` and `created` fields on `pipe` (retention)."""
        pipe.hmget(meta_key(key), [MetaField.STATE, MetaField.UPDATED, MetaField.CREATED])

    def exists(self) -> bool:
        """Whether the session was ever written (intake, a sub-agent's creation)."""
        return bool(self.redis.exists(self.key))

    def note_created(self, now_ms: int) -> None:
        self.redis.hsetnx(self.key, MetaField.CREATED, str(now_ms))

    def set_state(
        self,
        state: State,
        now_ms: int,
        *,
        last_turn_reason: str | None = None,
        turn_id: str | None = None,
        job: str | None = None,
    ) -> None:
        """The lifecycle state (jobs.session.state), with what the change says about the turn."""
        fields = {MetaField.STATE: state, MetaField.UPDATED: str(now_ms)}
        optional = {
            MetaField.LAST_TURN_REASON: last_turn_reason,
            MetaField.TURN_ID: turn_id,
            MetaField.JOB: job,
        }
        fields.update({name: value for name, value in optional.items() if value is not None})
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(self.key, mapping=dict(fields.items()))
            note_touched(pipe, self.session, now_ms)
            pipe.execute()

    def request_resume(self, by: str) -> None:
        self._set({MetaField.RESUME_REQUESTED: by})

    def clear_resume_request(self) -> None:
        self.redis.hdel(self.key, MetaField.RESUME_REQUESTED)

    def park_step(self, step_uuid: str) -> None:
        """The step whose calls wait for approval; the turn that goes on after the decisions runs it."""
        self._set({MetaField.PARKED_STEP: step_uuid})

    def clear_parked_step(self) -> None:
        self.redis.hdel(self.key, MetaField.PARKED_STEP)

    def note_cancel_asked(self, now_ms: int) -> None:
        self._set({MetaField.CANCEL_AT: str(now_ms)})

    def clear_cancel_asked(self) -> None:
        self.redis.hdel(self.key, MetaField.CANCEL_AT)

    def set_delivered(self, notice_id: str) -> None:
        """The outbox entry delivery has handled, through which it never posts again."""
        self._set({MetaField.DELIVERED: notice_id})

    def note_workspace(self, storage: str) -> None:
        """The session's workspace exists, on the storage named `storage` (jobs.storage)."""
        self.redis.hsetnx(self.key, MetaField.WORKSPACE, storage)

    def set_lineage(self, fields: Mapping[str, str]) -> None:
        """A sub-agent's place under its parent: `MetaField.SUB_*` fields (ChildInfo.to_meta)."""
        unknown = set(fields) - _SUB_FIELDS
        if unknown:
            raise ValueError(f"not sub-agent meta fields: {sorted(unknown)}")
        self._set(fields)

    def _set(self, fields: Mapping[str, str]) -> None:
        mapping: dict[FieldT, EncodableT] = dict(fields.items())
        self.redis.hset(self.key, mapping=mapping)
