"""A session's state in Redis: wire log, inbox, outbox, meta (docs/architecture.md, "Redis layout").

The wire log is the only source of truth for history. Every record is one stream entry whose
field `r` holds the record's JSON; the entry id comes back as the record's `id`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

from pydantic import BaseModel
from redis import Redis
from redis.asyncio import Redis as AsyncRedis
from redis.client import Pipeline
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from agent.messages import Message
from agent.wire import AppendMessage, record_to_json
from jobs.keys import (
    NOTICE_FIELD,
    RECORD_FIELD,
    SessionKey,
    card_children_key,
    card_key,
    inbox_key,
    lease_key,
    outbox_key,
    pending_cards_key,
    progress_key,
    wire_index_key,
    wire_key,
)
from jobs.lua import lua
from jobs.redis_text import text
from jobs.session.meta import MetaHash
from jobs.session.notices import Notice, ProgressNotice, TurnCard, parse_notice
from jobs.session.user_input import UserInput

# Append each record (ARGV: record, idempotency key, record, key …) unless one with its key was
# appended before; returns each entry's id either way, so a retried job never writes an event twice.
_APPEND_ONCE = f"""
local ids = {{}}
for i = 1, #ARGV, 2 do
  local id = redis.call('HGET', KEYS[2], ARGV[i + 1])
  if not id then
    id = redis.call('XADD', KEYS[1], '*', '{RECORD_FIELD}', ARGV[i])
    redis.call('HSET', KEYS[2], ARGV[i + 1], id)
  end
  ids[#ids + 1] = id
end
return ids
"""

VERSION_SUFFIX = "#v"  # progress hash: `<turn>#v` counts the turn's snapshots
ENTRY_SUFFIX = "#at"  # progress hash: `<turn>#at` is the turn's one outbox entry
UNFENCED = "*"  # a take that may run whoever holds the lease (tests, a turn without a lease)
UNLEASED = ""  # a take only while nobody holds the lease (the janitor's)

# Inbox → wire in one step, for the inputs the caller read (ARGV: count, then per input its inbox
# item as read, its wire record and its idempotency key). Refused (-2) when the inbox no longer
# starts with those items: an edit or delete landed after the read, so the caller reads again.
# Fenced by the lease: -1 unless KEYS[4] holds ARGV[2] (UNLEASED: unless nobody holds it).
_TAKE_INBOX = f"""
if ARGV[2] ~= '{UNFENCED}' and (redis.call('GET', KEYS[4]) or '{UNLEASED}') ~= ARGV[2] then return -1 end
local count = tonumber(ARGV[1])
for i = 1, count do
  if redis.call('LINDEX', KEYS[1], i - 1) ~= ARGV[3 * i] then return -2 end
end
local ids = {{}}
for i = 1, count do
  local once = ARGV[3 * i + 2]
  local id = redis.call('HGET', KEYS[3], once)
  if not id then
    id = redis.call('XADD', KEYS[2], '*', '{RECORD_FIELD}', ARGV[3 * i + 1])
    redis.call('HSET', KEYS[3], once, id)
  end
  ids[i] = id
end
redis.call('LTRIM', KEYS[1], count, -1)
return ids
"""
# A progress snapshot replaces the turn's card in the progress hash and bumps its version; only
# the turn's first snapshot adds an outbox entry (a marker without the card, ARGV[3]) to place the
# card in the thread. Later ones mark the turn in `cards_pending` for the delivery to show.
# Returns the turn's outbox entry id.
_POST_CARD = f"""
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local version = redis.call('HINCRBY', KEYS[1], ARGV[1] .. '{VERSION_SUFFIX}', 1)
local at = redis.call('HGET', KEYS[1], ARGV[1] .. '{ENTRY_SUFFIX}')
if at then
  redis.call('HSET', KEYS[3], ARGV[1], version)
  return at
end
at = redis.call('XADD', KEYS[2], '*', '{NOTICE_FIELD}', ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1] .. '{ENTRY_SUFFIX}', at)
return at
"""
# A session's own card (KEYS[4]) stored and posted as `_POST_CARD` does, in one step, unless its
# sub-agents have lines to nest in it (KEYS[5]): then nothing is written and false comes back.
_POST_OWN_CARD = f"""
if redis.call('EXISTS', KEYS[5]) == 1 then return false end
redis.call('SET', KEYS[4], ARGV[2])
{_POST_CARD}"""
TAKE_ATTEMPTS = 50  # each refusal means a person changed a waiting input in the last millisecond


class LeaseLost(RuntimeError):
    """Another worker holds the session now; this turn must stop writing."""


def now_ms() -> int:
    return int(time.time() * 1000)


class SessionStore:
    def __init__(self, redis: Redis, key: SessionKey) -> None:
        self.redis = redis
        self.key = key
        self.wire_key = wire_key(key)
        self.inbox_key = inbox_key(key)
        self.outbox_key = outbox_key(key)
        self.lease_key = lease_key(key)
        self.progress_key = progress_key(key)
        self._wire_index_key = wire_index_key(key)
        self.meta = MetaHash(redis, key)

    # -- wire log ----------------------------------------------------------------------

    def append(self, record: BaseModel | Mapping[str, Any], *, once_key: str | None = None) -> str:
        """Append one record; with `once_key`, a second append with the same key is a no-op."""
        payload = encode_record(record)
        if once_key is None:
            return text(self.redis.xadd(self.wire_key, {RECORD_FIELD: payload}))
        keys = [self.wire_key, self._wire_index_key]
        return text(lua(self.redis, _APPEND_ONCE)(keys=keys, args=[payload, once_key])[0])

    async def append_all_on(self, aio: AsyncRedis, records: Sequence[tuple[BaseModel, str]]) -> list[str]:
        """`append` each (record, key) once per key, in order and in one round trip, through the
        asyncio client `aio` (jobs.aio_redis); returns their entry ids."""
        keys = [self.wire_key, self._wire_index_key]
        args = [item for record, once_key in records for item in (encode_record(record), once_key)]
        return [text(entry_id) for entry_id in await lua(aio, _APPEND_ONCE)(keys=keys, args=args)]

    def read_wire(self, after: str | None = None) -> list[dict[str, Any]]:
        start = f"({after}" if after else "-"
        return [
            _decode_entry(entry_id, fields)
            for entry_id, fields in _entries(self.redis.xrange(self.wire_key, start))
        ]

    # -- input -------------------------------------------------------------------------

    def peek_inbox(self) -> list[UserInput]:
        return [UserInput.model_validate_json(item) for item in self.redis.lrange(self.inbox_key, 0, -1)]

    def take_inbox(self, lease_token: str = UNFENCED) -> list[tuple[Message, str]]:
        """Move the waiting inputs onto the wire log, each once (keyed by its Slack ts), as they
        are at that moment: an edit or delete that lands meanwhile makes the take read again.
        Returns each input's message and record id. With `lease_token`, only while it holds
        the lease (`LeaseLost` otherwise); with `UNLEASED`, only while nobody does."""
        for _ in range(TAKE_ATTEMPTS):
            items = self.redis.lrange(self.inbox_key, 0, -1)
            if not items:
                return []
            take = _Take(self, items, lease_token)
            try:
                taken = lua(self.redis, _TAKE_INBOX)(keys=take.keys, args=take.args)
            except (RedisConnectionError, RedisTimeoutError) as error:
                taken = take.known_or_raise(error, self.redis.hmget(self._wire_index_key, take.once_keys))
            if (ids := take.ids(taken)) is not None:
                return take.taken(ids)
        raise RuntimeError(f"{self.key}: the inbox kept changing while it was taken")

    async def take_inbox_on(self, aio: AsyncRedis, lease_token: str = UNFENCED) -> list[tuple[Message, str]]:
        """`take_inbox` through the asyncio client `aio` (jobs.aio_redis)."""
        for _ in range(TAKE_ATTEMPTS):
            items = await aio.lrange(self.inbox_key, 0, -1)
            if not items:
                return []
            take = _Take(self, items, lease_token)
            try:
                taken = await lua(aio, _TAKE_INBOX)(keys=take.keys, args=take.args)
            except (RedisConnectionError, RedisTimeoutError) as error:
                taken = take.known_or_raise(error, await aio.hmget(self._wire_index_key, take.once_keys))
            if (ids := take.ids(taken)) is not None:
                return take.taken(ids)
        raise RuntimeError(f"{self.key}: the inbox kept changing while it was taken")

    # -- outbox ------------------------------------------------------------------------

    def post_notice(self, notice: Notice) -> str:
        """Queue a notice; a progress snapshot replaces its turn's card (one entry per turn)."""
        if isinstance(notice, ProgressNotice):
            return self._post_card(notice.card)
        return text(self.redis.xadd(self.outbox_key, {NOTICE_FIELD: notice.model_dump_json()}))

    def _post_card(self, card: TurnCard) -> str:
        return text(self.post_card_in(self.redis, card))

    def post_card_in(self, client: Redis | Pipeline, card: TurnCard) -> Any:
        """Post `card` through `client`: the store's client, or a transaction's pipeline."""
        keys = [self.progress_key, self.outbox_key, pending_cards_key(self.key)]
        return lua(self.redis, _POST_CARD)(keys=keys, args=self._card_args(card), client=client)

    @staticmethod
    def _card_args(card: TurnCard) -> list[str]:
        marker = json.dumps({"kind": "progress", "turn_id": card.turn_id}, separators=(",", ":"))
        return [card.turn_id, card.model_dump_json(), marker]

    def post_own_card(self, card: TurnCard) -> bool:
        """Store `card` as the session's card and post it, in one round trip, unless sub-agents'
        lines wait to be nested in it (False: nothing written; compose it, jobs.delegation)."""
        keys = [self.progress_key, self.outbox_key, pending_cards_key(self.key)]
        keys += [card_key(self.key), card_children_key(self.key)]
        return lua(self.redis, _POST_OWN_CARD)(keys=keys, args=self._card_args(card)) is not None

    def card_snapshot(self, turn_id: str) -> tuple[int, TurnCard] | None:
        """The turn's newest card and its version, or None when the turn posted none."""
        raw, version = self.redis.hmget(self.progress_key, [turn_id, turn_id + VERSION_SUFFIX])
        if raw is None:
            return None
        return int(version or 0), TurnCard.model_validate_json(raw)

    def notices(self, after: str | None = None, count: int | None = None) -> list[tuple[str, Notice]]:
        """Notices after the cursor; a turn's progress entry carries the turn's newest card."""
        start = f"({after}" if after else "-"
        return self._with_cards(self.redis.xrange(self.outbox_key, start, count=count))

    def recent_notices(self, count: int) -> list[tuple[str, Notice]]:
        """The newest `count` notices, newest first."""
        return self._with_cards(self.redis.xrevrange(self.outbox_key, count=count))

    def _with_cards(self, reply: object) -> list[tuple[str, Notice]]:
        found: list[tuple[str, Notice]] = []
        for entry_id, fields in _entries(reply):
            raw = fields[NOTICE_FIELD.encode()]
            data = json.loads(raw)
            if data.get("kind") == "progress" and "card" not in data:
                snapshot = self.card_snapshot(data["turn_id"])
                if snapshot is None:
                    continue  # the turn's card is gone (retention); nothing to show
                found.append((text(entry_id), ProgressNotice(turn_id=data["turn_id"], card=snapshot[1])))
            else:
                found.append((text(entry_id), parse_notice(raw)))
        return found

    # -- meta --------------------------------------------------------------------------

    def touch(self) -> None:
        self.meta.note_created(now_ms())


def encode_record(record: BaseModel | Mapping[str, Any]) -> str:
    data = record_to_json(record) if isinstance(record, BaseModel) else dict(record)
    data.setdefault("time", now_ms())
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


# A stream range as our clients return it: bytes, never None (redis-py types it for every client).
_Entries = list[tuple[bytes, dict[bytes, bytes]]]


def _entries(reply: object) -> _Entries:
    return cast(_Entries, reply)


def _decode_entry(entry_id: bytes, fields: Mapping[bytes, bytes]) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(fields[RECORD_FIELD.encode()])
    record["id"] = text(entry_id)
    return record


class _Take:
    """One attempt to move the inbox's `items` onto the wire (SessionStore.take_inbox): the
    script's keys and arguments, and how its answer reads."""

    def __init__(self, store: SessionStore, items: list[bytes | str], lease_token: str) -> None:
        self.store = store
        self.inputs = [UserInput.model_validate_json(item) for item in items]
        self.once_keys = [f"input:{one.ts}" for one in self.inputs]
        self.args: list[str | bytes | int] = [len(items), lease_token]
        for item, one, once in zip(items, self.inputs, self.once_keys, strict=True):
            self.args += [item, encode_record(AppendMessage(message=one.to_message())), once]
        self.keys = [store.inbox_key, store.wire_key, store._wire_index_key, store.lease_key]

    def known_or_raise(self, error: Exception, known: list[bytes | str | None]) -> list[bytes | str]:
        """The answer was lost, and may be what was lost: the take wrote all of its keys or
        none of them, so the wire's index tells which (re-raised when it did not write)."""
        ids = [entry_id for entry_id in known if entry_id]
        if len(ids) < len(self.once_keys):
            raise error
        return ids

    def ids(self, taken: Any) -> list[str] | None:
        """The taken inputs' record ids; None when the inbox changed meanwhile (take again)."""
        if taken == -1:
            raise LeaseLost(str(self.store.key))
        return None if taken == -2 else [text(entry_id) for entry_id in taken]

    def taken(self, ids: list[str]) -> list[tuple[Message, str]]:
        return [(one.to_message(), entry_id) for one, entry_id in zip(self.inputs, ids, strict=True)]
