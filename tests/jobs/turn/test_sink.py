from agent.fold import fold
from agent.wire import AppendMessage
from jobs.input import route_input
from jobs.keys import SessionKey
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

    taken = RedisTurnSink(store, "t1").take_input()

    assert [m.text() for m, _ in taken] == ["<@U1>: also b"]
    assert [m.text() for m in fold(store.read_wire())] == ["<@U1>: also b"]
    assert store.peek_inbox() == []


def test_inputs_come_in_order_and_the_inbox_is_emptied(redis):
    store = SessionStore(redis, KEY)
    Lease.acquire(store, owner="t")
    for n in range(3):
        route_input(store, UserInput(text=f"m{n}", user="U1", ts=f"1700000001.00000{n}"))
    sink = RedisTurnSink(store, "t1")
    assert [m.text() for m, _ in sink.take_input()] == ["<@U1>: m0", "<@U1>: m1", "<@U1>: m2"]
    assert sink.take_input() == []
