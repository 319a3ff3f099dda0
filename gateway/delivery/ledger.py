"""The delivery ledger: which outbox entries are in the thread already, and as which message.

`ts` maps an entry (an outbox id, or a part of one) to the Slack ts of its message. An entry
is marked in flight before its post and unmarked with the ts in one step after it, so a post
whose worker died before recording it is recognisable: in flight, but no ts.

The notes beside it are written only by the deliverer holding the thread's lock, so during its
pass (`hold_notes`) each is read from Redis once and what the pass writes is remembered: a pass
otherwise asked Redis for the same few notes a dozen times.
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
        self._held: dict[str, str | None] | None = None  # the pass's notes, as read and written

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
        self._remember(notes)

    def set_notes(self, notes: Notes) -> None:
        self.redis.hset(self.notes_key, mapping=notes)
        self._remember(notes)

    def replace_notes(self, notes: Notes, dropped: str) -> None:
        """`set_notes` and drop the note `dropped`, in one step."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(self.notes_key, mapping=notes)
        pipe.hdel(self.notes_key, dropped)
        pipe.execute()
        self._remember({**notes, dropped: ""})

    def note(self, name: str) -> str | None:
        """Small facts delivery keeps beside the ledger (how an answer was split, card timings)."""
        return self.notes(name)[0]

    def notes(self, *names: str) -> list[str | None]:
        """`note` of each name, in one round trip (none for those this pass holds already)."""
        if self._held is None:
            return self._read(list(names))
        unread = list(dict.fromkeys(name for name in names if name not in self._held))
        if unread:
            self._held.update(zip(unread, self._read(unread), strict=True))
        return [self._held[name] for name in names]

    def set_note(self, name: str, value: str) -> None:
        self.set_notes({name: value})

    def hold_notes(self, *names: str) -> None:
        """From now until `let_go_of_notes`, the deliverer's pass under the thread's lock: each
        note is read once, `names` now and together, and the pass's own writes are remembered."""
        self._held = {}
        self.notes(*names)

    def let_go_of_notes(self) -> None:
        self._held = None

    def _read(self, names: list[str]) -> list[str | None]:
        return [text(value) if value else None for value in self.redis.hmget(self.notes_key, names)]

    def _remember(self, notes: Notes) -> None:
        if self._held is not None:
            for name, value in notes.items():
                self._held[_as_text(name)] = _as_text(value) or None


def _as_text(value: EncodableT) -> str:
    """A note's name or value as Redis gives it back (as text)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode()
    return str(value)
