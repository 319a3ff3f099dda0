"""The delivery job (queue `slack`): post a session's outbox to its thread, in order, once.

A per-session lock keeps deliveries of one thread in order; the ledger (outbox id → Slack ts)
makes a retried delivery skip what was already posted.
"""

from __future__ import annotations

import logging

from redis import Redis
from slack_sdk import WebClient

from gateway.slack_client import web_client
from jobs import runtime
from jobs.keys import SessionKey
from jobs.notices import Notice
from jobs.queues import delivery_started
from jobs.store import SessionStore

log = logging.getLogger(__name__)

DELIVERY_LOCK_MS = 120_000  # longer than one post with its 429 retries; renewed per notice
CURSOR_FIELD = "delivered"


def deliver(session_key: str) -> int:
    """RQ entry point: post every undelivered notice; returns how many were posted."""
    key = SessionKey.parse(session_key)
    redis = runtime.redis_client()
    delivery_started(redis, key)
    return Delivery(SessionStore(redis, key), web_client(runtime.settings())).run()


class Delivery:
    def __init__(self, store: SessionStore, client: WebClient) -> None:
        self.store = store
        self.client = client
        self.lock_key = store.key.redis_key("delivering")
        self.ledger_key = store.key.redis_key("ledger")

    def run(self) -> int:
        posted = 0
        # Whoever holds the lock drains; after letting go it looks once more, so a notice
        # queued while it held the lock (whose own job found the lock taken) is not stranded.
        while self._lock():
            try:
                posted += self._drain()
            finally:
                self.store.redis.delete(self.lock_key)
            if not self._pending():
                break
        return posted

    def _lock(self) -> bool:
        return bool(self.store.redis.set(self.lock_key, "1", nx=True, px=DELIVERY_LOCK_MS))

    def _pending(self) -> bool:
        return bool(self.store.notices(after=self._cursor(), count=1))

    def _cursor(self) -> str | None:
        return self.store.meta().get(CURSOR_FIELD)

    def _drain(self) -> int:
        posted = 0
        for notice_id, notice in self.store.notices(after=self._cursor()):
            if not self._already_posted(notice_id):
                self._post(notice_id, notice)
                posted += 1
            self.store.set_meta(**{CURSOR_FIELD: notice_id})
            self.store.redis.pexpire(self.lock_key, DELIVERY_LOCK_MS)
        return posted

    def _already_posted(self, notice_id: str) -> bool:
        redis: Redis = self.store.redis
        return bool(redis.hexists(self.ledger_key, notice_id))

    def _post(self, notice_id: str, notice: Notice) -> None:
        key = self.store.key
        if not hasattr(notice, "text"):
            return  # progress cards and approval cards are rendered by the Slack layer
        response = self.client.chat_postMessage(
            channel=key.channel, thread_ts=key.thread_ts, text=notice.text
        )
        self.store.redis.hset(self.ledger_key, notice_id, response["ts"])
        log.info("posted %s notice %s of %s as %s", notice.kind, notice_id, key, response["ts"])
