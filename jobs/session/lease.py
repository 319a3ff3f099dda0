"""One turn per session: a Redis lease with a token and a TTL kept alive by a heartbeat.

The heartbeat runs in a thread, so the lease lives exactly as long as the worker process: a
killed worker stops renewing and the lease expires within `LEASE_TTL_MS`, which is how the
janitor tells a dead turn from a slow one.

A worker that cannot renew (Redis unreachable) gives the lease up in its own mind well before
it can expire for others (`Lease.in_doubt`): the turn stops its tools and writes nothing more,
so two turns of one session never overlap.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from types import TracebackType

from redis import Redis

from jobs.keys import RUNNING_SESSIONS, turn_wanted_key
from jobs.log_context import in_context
from jobs.lua import delete_if_holds, lua
from jobs.session.store import LeaseLost, SessionStore

__all__ = ["Lease", "LeaseLost", "revoke"]

log = logging.getLogger(__name__)

LEASE_TTL_MS = 20_000  # a dead worker's session is noticed within this plus one janitor sweep
HEARTBEATS_PER_TTL = 4  # one slow Redis call is survivable
DOUBT_AFTER_TTL = 0.5  # two beats in a row failed: stop now, while the tools have time to die

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

# Release only when no input is waiting, atomically: input pushed to the inbox after this
# check goes to the wire log instead (see jobs/input.lua), so nothing falls between. Returns 2
# when a turn job found the session leased meanwhile (its `wanted` word, taken here).
_RELEASE_IF_IDLE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('LLEN', KEYS[2]) > 0 then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[3], ARGV[2])
return 1 + redis.call('DEL', KEYS[4])
"""
WANTED_TTL_S = 3600  # outlives any turn that holds the session; a stale word costs one idle job


def revoke(store: SessionStore, token: str) -> bool:
    """Take the lease from its holder, if `token` still holds it: the holder's next renewal
    fails and its turn writes nothing more (the janitor's backstop for a turn deaf to a cancel)."""
    return delete_if_holds(store.redis, store.lease_key, token)


class Lease:
    def __init__(self, store: SessionStore, token: str, ttl_ms: int = LEASE_TTL_MS) -> None:
        self.store = store
        self.token = token
        self.ttl_ms = ttl_ms
        self.lost = threading.Event()
        self.turn_wanted = False
        self._renewed_at = time.monotonic()  # when the last renewal that succeeded was sent
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

    @classmethod
    def acquire_or_ask(cls, store: SessionStore, owner: str = "", ttl_ms: int = LEASE_TTL_MS) -> Lease | None:
        """Take the lease for a turn. When another job holds it, leave word that a turn is
        wanted, so the holder schedules one when it gives the session back; then try once
        more, in case it gave the session back before it could see the word."""
        lease = cls.acquire(store, owner, ttl_ms)
        if lease is None:
            store.redis.set(turn_wanted_key(store.key), "1", ex=WANTED_TTL_S)
            lease = cls.acquire(store, owner, ttl_ms)
        if lease is not None:
            store.redis.delete(turn_wanted_key(store.key))  # this turn is the one wanted
        return lease

    def renew(self) -> bool:
        sent_at = time.monotonic()
        renewed = lua(self.store.redis, _RENEW)(keys=[self.store.lease_key], args=[self.token, self.ttl_ms])
        if not renewed:
            self.lost.set()
        else:
            self._renewed_at = sent_at
        return bool(renewed)

    def in_doubt(self) -> bool:
        """Whether this worker must act as if another owns the session: the lease was taken,
        or no renewal got through for half its TTL (without asking Redis, which may be away).
        Once in doubt, always: the turn stops rather than overlap with the next holder's."""
        if (
            not self.lost.is_set()
            and time.monotonic() - self._renewed_at > self.ttl_ms / 1000 * DOUBT_AFTER_TTL
        ):
            log.error("could not renew the lease of %s; the turn stops before it can expire", self.store.key)
            self.lost.set()
        return self.lost.is_set()

    def release_if_idle(self) -> bool:
        """Give the session up unless input is waiting in the inbox (then keep it and go on)."""
        store = self.store
        keys = [store.lease_key, store.inbox_key, RUNNING_SESSIONS, turn_wanted_key(store.key)]
        outcome = lua(store.redis, _RELEASE_IF_IDLE)(keys=keys, args=[self.token, str(store.key)])
        if outcome == -1:
            raise LeaseLost(str(store.key))
        if outcome > 0:
            self.stop_heartbeat()
        self.turn_wanted = outcome == 2
        return bool(outcome > 0)

    def hand_back(self) -> bool:
        """Give the session up. Input still waiting in the inbox is moved onto the wire first,
        so it can start the next turn at once rather than wait for this lease to expire: True
        when input was moved or a turn job found the session leased meanwhile (the caller
        schedules that turn)."""
        moved = False
        while not self.release_if_idle():
            moved = bool(self.store.take_inbox(self.token)) or moved
        return moved or self.turn_wanted

    def start_heartbeat(self) -> Lease:
        self._thread = threading.Thread(target=in_context(self._beat), name="lease-heartbeat", daemon=True)
        self._thread.start()
        return self

    def stop_heartbeat(self) -> None:
        self._stop.set()

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl_ms / 1000 / HEARTBEATS_PER_TTL) and not self.in_doubt():
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
