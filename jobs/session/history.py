"""Loading a session's history for a turn: the compaction checkpoint plus the wire tail.

After a compaction the session keeps a checkpoint (the folded history right after the
summary and the wire id it covers), so starting a turn reads checkpoint + tail, never the
whole log.
"""

from __future__ import annotations

import json

from pydantic import TypeAdapter

from agent.fold import HistoryFold
from agent.messages import Message
from jobs import keys
from jobs.session.store import SessionStore

_MESSAGES = TypeAdapter(list[Message])


def checkpoint_key(store: SessionStore) -> str:
    return keys.checkpoint_key(store.key)


def save_checkpoint(store: SessionStore, history: list[Message], through: str) -> None:
    messages = [message.model_dump(mode="json", exclude_none=True) for message in history]
    store.redis.set(checkpoint_key(store), json.dumps({"through": through, "history": messages}))


def load_fold(store: SessionStore) -> HistoryFold:
    raw = store.redis.get(checkpoint_key(store))
    if raw is None:
        return HistoryFold.from_records(store.read_wire())
    checkpoint = json.loads(raw)
    history = _MESSAGES.validate_python(checkpoint["history"])
    return HistoryFold.from_records(store.read_wire(after=checkpoint["through"]), history)
