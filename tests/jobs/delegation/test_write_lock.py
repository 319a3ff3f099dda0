"""The workspace write lock on a real Redis: the scheduler's conflict rule across holders."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent.tools import accesses as acc
from jobs.delegation.write_lock import RedisWriteLock

WS = Path("/srv/ws")


async def holds_together(lock: RedisWriteLock, first, second) -> bool:
    """Does `second` get the lock while `first` holds it?"""
    async with lock.hold(first):
        try:
            async with asyncio.timeout(0.3):
                async with lock.hold(second):
                    return True
        except TimeoutError:
            return False


@pytest.mark.parametrize(
    ("first", "second", "together"),
    [
        (acc.write_file("/srv/ws/a.txt"), acc.write_file("/srv/ws/a.txt"), False),
        (acc.write_file("/srv/ws/a.txt"), acc.write_file("/srv/ws/A.TXT"), False),  # paths are lower-cased
        (acc.write_file("/srv/ws/a.txt"), acc.write_file("/srv/ws/b.txt"), True),
        (acc.write_tree("/srv/ws/src"), acc.read_write_file("/srv/ws/src/x.py"), False),
        (acc.write_file("/srv/ws/src"), acc.write_file("/srv/ws/src/x.py"), True),  # not recursive
        (acc.everything(), acc.write_file("/srv/ws/b.txt"), False),
        (acc.write_file("/srv/ws/b.txt"), acc.everything(), False),
    ],
)
def test_conflicts_follow_the_scheduler_rule(redis, first, second, together: bool):
    lock = RedisWriteLock(redis, WS)
    assert asyncio.run(holds_together(lock, first, second)) is together
    assert lock.holders() == {}


def test_other_workspaces_are_independent(redis):
    async def both() -> bool:
        async with RedisWriteLock(redis, WS).hold(acc.everything()):
            async with asyncio.timeout(0.3):
                async with RedisWriteLock(redis, Path("/srv/other")).hold(acc.everything()):
                    return True

    assert asyncio.run(both())


def test_a_dead_holder_lapses(redis):
    lock = RedisWriteLock(redis, WS)
    now_ms = int(redis.time()[0]) * 1000
    redis.hset(lock.key, "dead-worker", f"{now_ms - 1}\n*")  # its lease ran out a moment ago

    async def take() -> None:
        async with asyncio.timeout(1), lock.hold(acc.write_file("/srv/ws/a.txt")):
            assert list(lock.holders().values()) == [["f:/srv/ws/a.txt"]]

    asyncio.run(take())
    assert lock.holders() == {}


def test_a_waiting_write_starts_when_the_holder_finishes(redis):
    lock = RedisWriteLock(redis, WS)
    order: list[str] = []

    async def writer(name: str, delay: float) -> None:
        await asyncio.sleep(delay)
        async with lock.hold(acc.write_file("/srv/ws/a.txt")):
            order.append(f"{name} in")
            await asyncio.sleep(0.1)
            order.append(f"{name} out")

    async def main() -> None:
        await asyncio.gather(writer("first", 0), writer("second", 0.02))

    asyncio.run(main())
    assert order == ["first in", "first out", "second in", "second out"]
