"""One turn per session: a Redis lease with a token and a TTL kept alive by the process's keeper.

One `LeaseKeeper` thread per process renews every lease the process holds, those due in one
pipelined round trip per tick, so the lease lives exactly as long as the worker process: a
killed worker stops renewing and the lease expires within `LEASE_TTL_MS`, which is how the
janitor tells a dead turn from a slow one. The keeper renews only while the process's turns'
event loop answers (`keep_while`): a wedged loop loses its leases, and the janitor recovers its
sessions, instead of holding them forever.

A worker that cannot renew (Redis unreachable) gives the lease up in its own mind well before
it can expire for others (`Lease.in_doubt`): the turn stops its tools and writes nothing more,
so two turns of one session never overlap.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from types import TracebackType

from redis import Redis

from jobs.keys import RUNNING_SESSIONS, turn_wanted_key
from jobs.log_context import bound, session_fields
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
        self.renewed_at = time.monotonic()  # when the last renewal that succeeded was sent
        self.released = False  # given back by this process: a renewal crossing that finds no lease
        self._releasing = threading.Lock()
        self._on_lost: list[Callable[[], None]] = []

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
            self.renewed_at = sent_at
        return bool(renewed)

    def in_doubt(self) -> bool:
        """Whether this worker must act as if another owns the session: the lease was taken,
        or no renewal got through for half its TTL (without asking Redis, which may be away).
        Once in doubt, always: the turn stops rather than overlap with the next holder's."""
        if (
            not self.lost.is_set()
            and time.monotonic() - self.renewed_at > self.ttl_ms / 1000 * DOUBT_AFTER_TTL
        ):
            log.error("could not renew the lease of %s; the turn stops before it can expire", self.store.key)
            self.lost.set()
        return self.lost.is_set()

    def release_if_idle(self) -> bool:
        """Give the session up unless input is waiting in the inbox (then keep it and go on)."""
        store = self.store
        keys = [store.lease_key, store.inbox_key, RUNNING_SESSIONS, turn_wanted_key(store.key)]
        with self._releasing:
            outcome = lua(store.redis, _RELEASE_IF_IDLE)(keys=keys, args=[self.token, str(store.key)])
            if outcome == -1:
                raise LeaseLost(str(store.key))
            self.released = outcome > 0
        if self.released:
            self.stop_heartbeat()
        self.turn_wanted = outcome == 2
        return self.released

    def taken(self) -> bool:
        """A renewal found no lease of ours: taken by another, unless this process released it,
        whose release may have crossed the renewal (it holds `_releasing` until it says so)."""
        with self._releasing:
            return not self.released

    def hand_back(self) -> bool:
        """Give the session up. Input still waiting in the inbox is moved onto the wire first,
        so it can start the next turn at once rather than wait for this lease to expire: True
        when input was moved or a turn job found the session leased meanwhile (the caller
        schedules that turn)."""
        moved = False
        while not self.release_if_idle():
            moved = bool(self.store.take_inbox(self.token)) or moved
        return moved or self.turn_wanted

    def on_lost(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback()` (from the heartbeat's thread) once the lease is lost or in doubt,
        so the turn stops its tools at once; returns a remover."""
        self._on_lost.append(callback)
        return lambda: self._on_lost.remove(callback) if callback in self._on_lost else None

    def start_heartbeat(self) -> Lease:
        keeper().hold(self)
        return self

    def stop_heartbeat(self) -> None:
        keeper().drop(self)

    def lose(self) -> None:
        """The lease was taken, or is in doubt: tell whoever must stop (`on_lost`), once."""
        self.lost.set()
        callbacks, self._on_lost = self._on_lost, []
        for callback in callbacks:
            callback()

    def __enter__(self) -> Lease:
        return self.start_heartbeat()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop_heartbeat()


TICK_S = 0.5  # how often the keeper looks for leases due a renewal (early by at most this)


class LeaseKeeper:
    """Renews the leases of this process (see the module's doc). Thread-safe."""

    def __init__(self, tick_s: float = TICK_S) -> None:
        self.tick_s = tick_s
        self._held: set[Lease] = set()
        self._lock = threading.Lock()
        self._alive: Callable[[], bool] = lambda: True
        self._thread: threading.Thread | None = None

    def keep_while(self, alive: Callable[[], bool]) -> None:
        """Renew only while `alive()` (the turns' event loop answers its probe)."""
        self._alive = alive

    def hold(self, lease: Lease) -> None:
        with self._lock:
            self._held.add(lease)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="lease keeper", daemon=True)
                self._thread.start()

    def drop(self, lease: Lease) -> None:
        with self._lock:
            self._held.discard(lease)

    def held(self) -> list[Lease]:
        with self._lock:
            return list(self._held)

    def _run(self) -> None:
        while True:
            time.sleep(self.tick_s)  # the keeper's period
            try:
                self.tick()
            except Exception:  # a bug in one tick must not end the renewals
                log.exception("the lease keeper's tick failed")

    def tick(self) -> None:
        """Renew the leases due, in one round trip; lose those taken or in doubt."""
        due = self.due()
        if due and self._alive():
            try:
                self.renew(due)
            except Exception:  # Redis away: a lease not renewed for half its TTL is lost below
                log.warning("could not renew %d lease(s)", len(due), exc_info=True)
        for lease in self.held():
            if lease.in_doubt():
                self.drop(lease)
                lease.lose()

    def due(self) -> list[Lease]:
        """The leases that fall due before the next tick: none is renewed later than its beat."""
        now = time.monotonic()
        return [
            lease
            for lease in self.held()
            if now - lease.renewed_at >= lease.ttl_ms / 1000 / HEARTBEATS_PER_TTL - self.tick_s
        ]

    def renew(self, due: list[Lease]) -> None:
        sent_at = time.monotonic()
        by_client: dict[int, list[Lease]] = {}
        for lease in due:
            by_client.setdefault(id(lease.store.redis), []).append(lease)
        for leases in by_client.values():
            pipe = leases[0].store.redis.pipeline(transaction=False)
            for lease in leases:
                lua(lease.store.redis, _RENEW)(
                    keys=[lease.store.lease_key], args=[lease.token, lease.ttl_ms], client=pipe
                )
            for lease, renewed in zip(leases, pipe.execute(raise_on_error=False), strict=True):
                if renewed == 1:
                    lease.renewed_at = sent_at
                elif renewed == 0 and lease.taken():
                    with bound(**session_fields(lease.store.key)):
                        log.error("lost the lease of %s; the turn stops writing", lease.store.key)
                    self.drop(lease)
                    lease.lose()


_keeper = LeaseKeeper()


def keeper() -> LeaseKeeper:
    """This process's keeper."""
    return _keeper
