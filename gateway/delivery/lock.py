"""One deliverer per thread at a time: a Redis lock kept alive by a heartbeat while it works.

The lock lives as long as its holder: a worker that dies stops renewing it and it expires
within `LOCK_TTL_MS`, after which the next delivery (or the sweep scheduled for it) takes over.
"""

from __future__ import annotations

import threading
import uuid
from types import TracebackType

from redis import Redis

from jobs.lua import lua

LOCK_TTL_MS = 10_000  # a dead deliverer blocks its thread for at most this long
RENEW_EVERY_S = LOCK_TTL_MS / 5000  # five renewals per TTL: a slow Redis call is survivable

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class DeliveryLock:
    def __init__(self, redis: Redis, key: str) -> None:
        self.redis = redis
        self.key = key
        self.token = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> bool:
        if not self.redis.set(self.key, self.token, nx=True, px=LOCK_TTL_MS):
            return False
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, name="delivery-lock", daemon=True)
        self._thread.start()
        return True

    def remaining_ms(self) -> int:
        return max(0, int(self.redis.pttl(self.key)))

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        lua(self.redis, _RELEASE)(keys=[self.key], args=[self.token])

    def _beat(self) -> None:
        while not self._stop.wait(RENEW_EVERY_S):
            try:
                if not lua(self.redis, _RENEW)(keys=[self.key], args=[self.token, LOCK_TTL_MS]):
                    return
            except Exception:  # a Redis blip: the next beat retries before the TTL runs out
                continue

    def __enter__(self) -> DeliveryLock:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
