"""The process's lease keeper (jobs.session.lease), on a real Redis: it renews the leases that are
due, tells a turn whose lease was taken, and stops renewing while the turns' loop does not
answer, so a wedged process loses its sessions instead of holding them."""

from __future__ import annotations

from redis import Redis

from jobs.keys import SessionKey
from jobs.session.lease import HEARTBEATS_PER_TTL, Lease, LeaseKeeper
from jobs.session.store import SessionStore

TTL_MS = 20_000


def leased(redis: Redis, n: int) -> SessionStore:
    return SessionStore(redis, SessionKey(team="T1", channel="C1", thread_ts=f"1700000000.00{n:04d}"))


def due(lease: Lease) -> Lease:
    """As if the last renewal was a quarter of the TTL ago (the keeper's clock is monotonic)."""
    lease.renewed_at -= TTL_MS / 1000 / HEARTBEATS_PER_TTL
    return lease


def acquired(redis: Redis, n: int) -> Lease:
    lease = Lease.acquire(leased(redis, n), owner="turn", ttl_ms=TTL_MS)
    assert lease is not None
    return lease


def test_the_leases_due_are_renewed_together_and_the_others_left_alone(redis: Redis) -> None:
    keeper = LeaseKeeper()
    stale = [due(acquired(redis, n)) for n in range(3)]
    fresh = acquired(redis, 9)
    for lease in [*stale, fresh]:
        redis.pexpire(lease.store.lease_key, 1_000)  # as if the TTL had nearly run out
        keeper.hold(lease)
    keeper.tick()
    assert all(redis.pttl(lease.store.lease_key) > 10_000 for lease in stale)
    assert redis.pttl(fresh.store.lease_key) <= 1_000
    assert not any(lease.lost.is_set() for lease in [*stale, fresh])


def test_a_lease_that_falls_due_before_the_next_tick_is_renewed_in_this_one(redis: Redis) -> None:
    """The keeper looks every `tick_s`: a lease it left until its next look would be renewed up
    to a tick later than a quarter of its TTL (5.5 s, measured by bench.concurrency)."""
    keeper = LeaseKeeper(tick_s=10)  # its own thread looks again only after the test
    lease = acquired(redis, 1)
    lease.renewed_at -= TTL_MS / 1000 / HEARTBEATS_PER_TTL - 5  # due in 5 s, before the next look
    redis.pexpire(lease.store.lease_key, 1_000)
    keeper.hold(lease)
    keeper.tick()
    assert redis.pttl(lease.store.lease_key) > 10_000


def test_a_lease_taken_by_another_worker_stops_its_turn_once(redis: Redis) -> None:
    keeper = LeaseKeeper()
    lease = due(acquired(redis, 1))
    told: list[str] = []
    lease.on_lost(lambda: told.append("stop"))
    keeper.hold(lease)
    redis.set(lease.store.lease_key, "another-worker:token")
    keeper.tick()
    keeper.tick()
    assert told == ["stop"] and lease.in_doubt() and lease not in keeper.held()


def test_a_loop_that_does_not_answer_stops_the_renewals_and_its_turns_lose_their_leases(redis: Redis) -> None:
    keeper = LeaseKeeper()
    keeper.keep_while(lambda: False)  # the turns' event loop is wedged
    lease = due(acquired(redis, 2))
    told: list[str] = []
    lease.on_lost(lambda: told.append("stop"))
    keeper.hold(lease)
    redis.pexpire(lease.store.lease_key, 1_000)
    keeper.tick()
    assert redis.pttl(lease.store.lease_key) <= 1_000  # not renewed
    assert told == []  # not yet in doubt
    lease.renewed_at -= TTL_MS / 1000  # half the TTL without a renewal has passed
    keeper.tick()
    assert told == ["stop"] and lease.in_doubt()


def test_a_redis_that_does_not_answer_loses_the_lease_once_half_its_ttl_passed(redis: Redis) -> None:
    """The renewal fails with a connection error: the keeper still finds the lease in doubt and
    stops its turn (the renewal's error must not skip that check)."""
    keeper = LeaseKeeper()
    lease = due(acquired(redis, 3))
    lease.store = SessionStore(Redis(port=1, socket_connect_timeout=0.5), lease.store.key)  # nothing listens
    told: list[str] = []
    lease.on_lost(lambda: told.append("stop"))
    keeper.hold(lease)
    keeper.tick()
    assert told == []
    lease.renewed_at -= TTL_MS / 1000
    keeper.tick()
    assert told == ["stop"] and lease not in keeper.held()


def test_a_renewal_that_crosses_the_turns_own_release_is_no_loss(redis: Redis) -> None:
    """The keeper found the lease due; before its renewal reached Redis the turn ended and gave
    the session back. The renewal finds no lease: that is the release, not another worker."""
    keeper = LeaseKeeper()
    lease = due(acquired(redis, 3))
    told: list[str] = []
    lease.on_lost(lambda: told.append("stop"))
    keeper.hold(lease)
    found_due = keeper.due()
    assert lease.release_if_idle()
    keeper.renew(found_due)
    assert told == [] and not lease.lost.is_set()
    assert not redis.exists(lease.store.lease_key)
