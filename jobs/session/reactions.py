"""A person's message is marked 👀 as soon as the agent takes it, and ✅ or ⚠️ when its turn ends.

The reactions go out through the delivery worker like any notice, in order with the thread's
posts; adding one twice or removing one that is gone is not an error there, so a retried delivery
changes nothing. The set of marked messages is taken and emptied in one transaction, so a message
that arrives while a turn ends keeps its 👀 for the turn it starts.
"""

from __future__ import annotations

from jobs.keys import reacted_key
from jobs.queues import schedule_delivery
from jobs.session.notices import ReactionNotice
from jobs.session.store import SessionStore

SEEN = "eyes"
DONE = "white_check_mark"
TROUBLE = "warning"


def mark_seen(store: SessionStore, message_ts: str) -> None:
    store.redis.sadd(reacted_key(store.key), message_ts)
    store.post_notice(ReactionNotice(message_ts=message_ts, add=SEEN))
    schedule_delivery(store.redis, store.key)


def mark_ended(store: SessionStore, outcome: str | None) -> None:
    """Replace 👀 on every message the ended turn took: ✅ `completed`; ⚠️ `failed`, `timed_out`
    or `interrupted` (its worker died); none (just removed) when it was cancelled. The caller
    schedules the delivery."""
    with store.redis.pipeline(transaction=True) as pipe:
        pipe.smembers(reacted_key(store.key))
        pipe.delete(reacted_key(store.key))
        marked, _ = pipe.execute()
    ending = {"completed": DONE, "failed": TROUBLE, "timed_out": TROUBLE, "interrupted": TROUBLE}.get(
        outcome or ""
    )
    for message_ts in sorted(ts.decode() for ts in marked):
        store.post_notice(ReactionNotice(message_ts=message_ts, remove=SEEN, add=ending))
