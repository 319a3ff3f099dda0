"""One turn per session: a Redis lease with a token and a TTL kept alive by a heartbeat.

The heartbeat runs in a thread, so the lease lives exactly as long as the worker process: a
killed worker stops renewing and the lease expires within `LEASE_TTL_MS`, which is how the
janitor tells a dead turn from a slow one.
"""

from __future__ import annotations

import logging
import threading
import uuid
from types import TracebackType

from redis import Redis

from jobs.keys import RUNNING_SESSIONS
from jobs.lua import lua
from jobs.session.store import SessionStore

log = logging.getLogger(__name__)

LEASE_TTL_MS = 20_000  # a dead worker's session is noticed within this plus one janitor sweep
HEARTBEATS_PER_TTL = 4  # one slow Redis call is survivable

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

# Release only when no input is waiting, atomically: input pushed to the inbox after this
# check goes to the wire log instead (see jobs/input.lua), so nothing falls between.
_RELEASE_IF_IDLE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('LLEN', KEYS[2]) > 0 then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[3], ARGV[2])
return 1
"""


class LeaseLost(RuntimeError):
    """Another worker holds the session now; this turn must stop writing."""


class Lease:
    def __init__(self, store: SessionStore, token: str, ttl_ms: int = LEASE_TTL_MS) -> None:
        self.store = store
        self.token = token
        self.ttl_ms = ttl_ms
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def acquire(cls, store: SessionStore, owner: str = "", ttl_ms: int = LEASE_TTL_MS) -> Lease | None:
        token = f"{owner}:{uuid.uuid4().hex}"
        redis: Redis = store.redis
        if not redis.set(store.lease_key, token, nx=True, px=ttl_ms):
            return None
        redis.sadd(RUNNING_SESSIONS, str(store.key))
        return cls(store, token, ttl_ms)

    def renew(self) -> bool:
        renewed = lua(self.store.redis, _RENEW)(keys=[self.store.lease_key], args=[self.token, self.ttl_ms])
        if not renewed:
            self.lost.set()
        return bool(renewed)

    def release_if_idle(self) -> bool:
        """Give the session up unless input is waiting in the inbox (then keep it and go on)."""
        keys = [self.store.lease_key, self.store.inbox_key, RUNNING_SESSIONS]
        outcome = lua(self.store.redis, _RELEASE_IF_IDLE)(keys=keys, args=[self.token, str(self.store.key)])
        if outcome == -1:
            raise LeaseLost(str(self.store.key))
        if outcome == 1:
            self.stop_heartbeat()
        return bool(outcome == 1)

    def start_heartbeat(self) -> Lease:
        self._thread = threading.Thread(target=self._beat, name="lease-heartbeat", daemon=True)
        self._thread.start()
        return self

    def stop_heartbeat(self) -> None:
        self._stop.set()

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl_ms / 1000 / HEARTBEATS_PER_TTL):
            try:
                if not self.renew():
                    log.error("lost the lease of %s; the turn stops writing", self.store.key)
                    return
            except Exception:  # a Redis blip: the next beat retries before the TTL runs out
                log.warning("could not renew the lease of %s", self.store.key, exc_info=True)

    def __enter__(self) -> Lease:
        return self.start_heartbeat()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop_heartbeat()
