import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis
from redis.asyncio import Redis as AsyncRedis
from redis.typing import KeyT

from agent.fold import fold
from agent.messages import user_message
from agent.wire import AppendMessage
from jobs.input import route_input
from jobs.keys import SessionKey, inbox_key
from jobs.session.inbox import edit_waiting, withdraw_waiting
from jobs.session.lease import Lease
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput
from jobs.turn.sink import RedisTurnSink

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000300")


def test_input_recorded_before_a_crash_is_not_recorded_twice(redis):
    store = SessionStore(redis, KEY)
    Lease.acquire(store, owner="t")
    steer = UserInput(text="also b", user="U1", ts="1700000000.000400")
    route_input(store, steer)
    # the previous worker appended it to the wire, then died before trimming the inbox
    store.append(AppendMessage(message=steer.to_message()), once_key=f"input:{steer.ts}")

    taken = asyncio.run(RedisTurnSink(store, "t1").take_input())

    assert [m.text() for m, _ in taken] == ["<@U1>: also b"]
    assert [m.text() for m in fold(store.read_wire())] == ["<@U1>: also b"]
    assert store.peek_inbox() == []


def test_inputs_come_in_order_and_the_inbox_is_emptied(redis):
    store = SessionStore(redis, KEY)
    Lease.acquire(store, owner="t")
    for n in range(3):
        route_input(store, UserInput(text=f"m{n}", user="U1", ts=f"1700000001.00000{n}"))
    sink = RedisTurnSink(store, "t1")

    async def twice() -> tuple[list[Any], list[Any]]:
        return await sink.take_input(), await sink.take_input()

    first, second = asyncio.run(twice())
    assert [m.text() for m, _ in first] == ["<@U1>: m0", "<@U1>: m1", "<@U1>: m2"]
    assert second == []


class Interleaving(Redis):
    """A real client on the same Redis that lets another party act right after it reads the
    inbox: an edit, a delete or a new message landing while the turn takes its input."""

    def __init__(self, redis: Redis, meanwhile: Callable[[], object]) -> None:
        super().__init__(connection_pool=redis.connection_pool)
        self.meanwhile: Callable[[], object] | None = meanwhile

    def lrange(self, name: KeyT, start: int, end: int) -> Any:
        items = super().lrange(name, start, end)
        if self.meanwhile is not None and name == inbox_key(KEY):
            action, self.meanwhile = self.meanwhile, None
            action()
        return items


class AsyncInterleaving(AsyncRedis):
    """`Interleaving` for the turn's own path: the asyncio client its sink takes the inbox with."""

    def __init__(self, redis: Redis, meanwhile: Callable[[], object]) -> None:
        kwargs = redis.connection_pool.connection_kwargs
        super().__init__(host=kwargs["host"], port=kwargs["port"], db=kwargs.get("db", 0))
        self.meanwhile: Callable[[], object] | None = meanwhile

    async def lrange(self, name: KeyT, start: int, end: int) -> Any:  # type: ignore[override]
        items = await super().lrange(name, start, end)
        if self.meanwhile is not None and name == inbox_key(KEY):
            action, self.meanwhile = self.meanwhile, None
            action()
        return items


def take_while(redis: Redis, store: SessionStore, meanwhile: Callable[[], object], path: str) -> list[Any]:
    """Take `store`'s inbox with `meanwhile` landing right after the inbox was read, on the
    synchronous path (a turn's start) or the asyncio one (its steps)."""
    if path == "sync":
        return SessionStore(Interleaving(redis, meanwhile), KEY).take_inbox()

    async def take() -> list[Any]:
        return await store.take_inbox_on(AsyncInterleaving(redis, meanwhile))

    return asyncio.run(take())


PATHS = pytest.mark.parametrize("path", ["sync", "async"])


def busy_store(redis: Redis) -> SessionStore:
    store = SessionStore(redis, KEY)
    Lease.acquire(store, owner="t")
    return store


def wire_texts(store: SessionStore) -> list[str]:
    return [m.text() for m in fold(store.read_wire())]


@PATHS
def test_an_edit_landing_while_the_inbox_is_taken_is_what_the_turn_reads(redis, path):
    store = busy_store(redis)
    route_input(store, UserInput(text="run the tests", user="U1", ts="1700000002.000001"))
    edited: list[bool] = []

    taken = take_while(
        redis, store, lambda: edited.append(edit_waiting(store, "1700000002.000001", "run lint")), path
    )

    assert edited == [True]  # the person was told their edit applied
    assert [m.text() for m, _ in taken] == ["<@U1>: run lint"]
    assert wire_texts(store) == ["<@U1>: run lint"] and store.peek_inbox() == []


@PATHS
def test_a_delete_and_a_new_message_landing_while_the_inbox_is_taken_are_both_kept(redis, path):
    store = busy_store(redis)
    route_input(store, UserInput(text="deploy", user="U1", ts="1700000002.000001"))
    route_input(store, UserInput(text="to staging", user="U1", ts="1700000002.000002"))

    def meanwhile() -> None:
        withdraw_waiting(store, "1700000002.000001")
        route_input(store, UserInput(text="and tell me", user="U1", ts="1700000002.000003"))

    taken = take_while(redis, store, meanwhile, path)

    assert [m.text() for m, _ in taken] == ["<@U1>: to staging", "<@U1>: and tell me"]
    assert wire_texts(store) == ["<@U1>: to staging", "<@U1>: and tell me"]
    assert store.peek_inbox() == []


def test_a_steps_records_land_in_order_and_once_when_written_again(redis):
    store = SessionStore(redis, KEY)
    sink = RedisTurnSink(store, "t1")
    records = [(AppendMessage(message=user_message(f"part {n}")), f"t1-s1:part:{n}") for n in range(3)]

    ids = asyncio.run(sink.record_all(records))
    again = asyncio.run(
        sink.record_all([records[1], (AppendMessage(message=user_message("new")), "t1-s1:new")])
    )

    assert [entry["id"] for entry in store.read_wire()] == [*ids, again[1]]
    assert again[0] == ids[1]  # written once: the key's first entry comes back
    assert [m.text() for m in fold(store.read_wire())] == ["part 0", "part 1", "part 2", "new"]
