"""The cancel listener of a turns' event loop (jobs.turn.cancels), on a real Redis: a cancel is
heard as it is published, one asked before the turn listened is found, and one asked while the
listener's connection was gone is found when it subscribes again."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from redis import Redis

from jobs.control import wake_the_turn
from jobs.keys import SessionKey, cancel_key
from jobs.turn.cancels import CancelListener

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000700")
OTHER = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000800")
LISTENER = "test-cancel-listener"  # its connection alone is cut: other tests' listeners share Redis
HEARD_WITHIN_S = 5.0  # a deadline for the test, not the measure (tests/e2e/test_cancel_push.py)


async def stopped_while_listening(
    listener: CancelListener, key: SessionKey, meanwhile: Callable[[], Awaitable[None]]
) -> bool:
    """Whether `key`'s stop was called while it listened and `meanwhile()` ran."""
    stopped = asyncio.Event()
    async with listener.hearing(key, stopped.set):
        await asyncio.wait_for(listener.subscribed.wait(), HEARD_WITHIN_S)
        await meanwhile()
        try:
            await asyncio.wait_for(stopped.wait(), HEARD_WITHIN_S)
        except TimeoutError:
            return False
    return True


def test_a_published_cancel_stops_its_turn_and_no_other(redis: Redis) -> None:
    async def main() -> tuple[bool, bool]:
        listener = CancelListener(redis)
        other = asyncio.Event()
        async with listener.hearing(OTHER, other.set):

            async def cancel() -> None:
                redis.set(cancel_key(KEY), "U1")
                wake_the_turn(redis, KEY)

            heard = await stopped_while_listening(listener, KEY, cancel)
            return heard, other.is_set()

    assert asyncio.run(main()) == (True, False)


def test_a_cancel_asked_before_the_turn_listened_is_found(redis: Redis) -> None:
    redis.set(cancel_key(KEY), "U1")  # and its wake-up went to nobody

    async def nothing() -> None:
        return None

    async def main() -> bool:
        listener = CancelListener(redis)
        async with listener.hearing(OTHER, lambda: None):
            await asyncio.wait_for(listener.subscribed.wait(), HEARD_WITHIN_S)
            return await stopped_while_listening(listener, KEY, nothing)

    assert asyncio.run(main())


def test_a_cancel_asked_while_the_listener_was_away_is_found_when_it_subscribes_again(redis: Redis) -> None:
    kwargs = redis.connection_pool.connection_kwargs
    named = Redis(host=kwargs["host"], port=kwargs["port"], db=kwargs["db"], client_name=LISTENER)

    async def while_away() -> None:
        [mine] = [c["id"] for c in redis.client_list() if c["name"] == LISTENER]
        redis.client_kill_filter(_id=mine)  # the listener's connection is cut ...
        redis.set(cancel_key(KEY), "U1")  # ... and the cancel's wake-up is lost with it

    async def main() -> bool:
        return await stopped_while_listening(CancelListener(named), KEY, while_away)

    assert asyncio.run(main())


def test_a_cancel_in_another_database_of_the_same_server_stops_nothing(redis: Redis) -> None:
    """Pub/sub spans the server's databases: another deployment's cancel of the same thread (a
    staging app in the same channel, on the next database) must not stop this one's turn."""
    kwargs = redis.connection_pool.connection_kwargs
    elsewhere = Redis(host=kwargs["host"], port=kwargs["port"], db=(kwargs["db"] + 1) % 16)
    shared = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000900")

    async def main() -> bool:
        listener = CancelListener(redis)
        stopped = asyncio.Event()
        async with listener.hearing(shared, stopped.set):

            async def cancel_elsewhere_then_here() -> None:
                elsewhere.set(cancel_key(shared), "U1", ex=60)
                wake_the_turn(elsewhere, shared)
                redis.set(cancel_key(OTHER), "U1")  # heard after the one before: a barrier
                wake_the_turn(redis, OTHER)

            assert await stopped_while_listening(listener, OTHER, cancel_elsewhere_then_here)
            return stopped.is_set()

    try:
        assert asyncio.run(main()) is False
    finally:
        elsewhere.delete(cancel_key(shared))
