"""The delivery ledger: which outbox entries are in the thread already, and as which message.

`ts` maps an entry (an outbox id, or a part of one) to the Slack ts of its message. An entry
is marked in flight before its post and unmarked with the ts in one step after it, so a post
whose worker died before recording it is recognisable: in flight, but no ts.
"""

from __future__ import annotations

import time

from redis.typing import EncodableT, FieldT

from jobs.keys import in_flight_key, ledger_key, ledger_notes_key
from jobs.redis_text import text
from jobs.session.store import SessionStore

Notes = dict[FieldT, EncodableT]  # ledger notes written together


class Ledger:
    def __init__(self, store: SessionStore) -> None:
        self.redis = store.redis
        self.ts_key = ledger_key(store.key)
        self.flight_key = in_flight_key(store.key)
        self.notes_key = ledger_notes_key(store.key)

    def ts(self, entry: str) -> str | None:
        value = self.redis.hget(self.ts_key, entry)
        return text(value) if value else None

    def in_flight_since(self, entry: str) -> float | None:
        value = self.redis.hget(self.flight_key, entry)
        return float(value) if value else None

    def begin(self, entry: str) -> None:
        self.redis.hset(self.flight_key, entry, f"{time.time():.3f}")

    def abandon(self, entry: str) -> None:
        """The post failed for certain (Slack said no): nothing to look for later."""
        self.redis.hdel(self.flight_key, entry)

    def record(self, entry: str, ts: str) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(self.ts_key, entry, ts)
        pipe.hdel(self.flight_key, entry)
        pipe.execute()

    def record_with_notes(self, entry: str, ts: str, notes: Notes) -> None:
        """`record`, and the facts that go with it, in one step: a crash keeps all or none."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(self.ts_key, entry, ts)
        pipe.hdel(self.flight_key, entry)
        pipe.hset(self.notes_key, mapping=notes)
        pipe.execute()

    def set_notes(self, notes: Notes) -> None:
        self.redis.hset(self.notes_key, mapping=notes)

    def note(self, name: str) -> str | None:
        """Small facts delivery keeps beside the ledger (how an answer was split, card timings)."""
        return self.notes(name)[0]

    def notes(self, *names: str) -> list[str | None]:
        """`note` of each name, in one round trip."""
        return [text(value) if value else None for value in self.redis.hmget(self.notes_key, list(names))]

    def set_note(self, name: str, value: str) -> None:
        self.redis.hset(self.notes_key, name, value)
