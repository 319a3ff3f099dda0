import pytest

from agent.fold import fold
from agent.wire import AppendMessage, TurnEnded
from jobs.input import route_input
from jobs.keys import SessionKey
from jobs.session.lease import Lease, LeaseLost
from jobs.session.notices import AnswerNotice
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")


def test_records_come_back_in_order_with_their_stream_ids(redis):
    store = SessionStore(redis, KEY)
    first = store.append(TurnEnded(turn_id="t", reason="completed"))
    second = store.append({"type": "context.clear"})
    records = store.read_wire()
    assert [r["id"] for r in records] == [first, second]
    assert records[0]["reason"] == "completed" and "time" in records[0]
    assert [r["id"] for r in store.read_wire(after=first)] == [second]


def test_append_once_writes_a_retried_event_only_once(redis):
    store = SessionStore(redis, KEY)
    record = AppendMessage(message=UserInput(text="hi", user="U1", ts="1.0").to_message())
    first = store.append(record, once_key="job1:step1:prompt")
    again = store.append(record, once_key="job1:step1:prompt")
    assert first == again
    assert len(store.read_wire()) == 1


def test_input_goes_to_the_wire_when_idle_and_to_the_inbox_while_a_turn_runs(redis):
    store = SessionStore(redis, KEY)
    assert route_input(store, UserInput(text="first", user="U1", ts="1.1")) == "wire"
    lease = Lease.acquire(store, owner="test")
    assert lease is not None
    assert route_input(store, UserInput(text="steer", user="U1", ts="1.2")) == "inbox"
    assert [m.text() for m in fold(store.read_wire())] == ["<@U1>: first"]
    assert [m.text() for m, _ in store.take_inbox()] == ["<@U1>: steer"]
    assert store.take_inbox() == []
    assert [m.text() for m in fold(store.read_wire())] == ["<@U1>: first", "<@U1>: steer"]


def test_the_lease_is_released_only_when_the_inbox_is_empty(redis):
    store = SessionStore(redis, KEY)
    lease = Lease.acquire(store, owner="test")
    assert Lease.acquire(store, owner="other") is None
    route_input(store, UserInput(text="late", user="U1", ts="1.3"))
    assert lease.release_if_idle() is False  # input waiting: the turn must go on
    store.take_inbox()
    assert lease.release_if_idle() is True
    assert Lease.acquire(store, owner="other") is not None


def test_handing_the_session_back_moves_waiting_input_onto_the_wire_for_the_next_turn(redis):
    store = SessionStore(redis, KEY)
    lease = Lease.acquire(store, owner="test")
    route_input(store, UserInput(text="late", user="U1", ts="1.3"))
    assert lease.hand_back() is True  # a turn must follow
    assert store.peek_inbox() == [] and [m.text() for m in fold(store.read_wire())] == ["<@U1>: late"]
    assert Lease.acquire(store, owner="next turn") is not None


def test_a_turn_job_that_finds_the_session_leased_is_scheduled_again_by_the_holder(redis):
    store = SessionStore(redis, KEY)
    holder = Lease.acquire(store, owner="compaction")
    assert Lease.acquire_or_ask(store, owner="turn") is None
    assert holder.hand_back() is True  # the turn job's word: a turn must follow
    lease = Lease.acquire_or_ask(store, owner="turn")
    assert lease is not None and lease.hand_back() is False  # the word was taken once


def test_a_take_fenced_by_a_lease_that_is_not_held_takes_nothing(redis):
    store = SessionStore(redis, KEY)
    Lease.acquire(store, owner="other worker")
    route_input(store, UserInput(text="steer", user="U1", ts="1.4"))
    with pytest.raises(LeaseLost):
        store.take_inbox("turn:expired-token")
    assert [i.text for i in store.peek_inbox()] == ["steer"] and store.read_wire() == []


def test_notices_are_read_back_in_order_after_a_cursor(redis):
    store = SessionStore(redis, KEY)
    one = store.post_notice(AnswerNotice(text="one"))
    store.post_notice(AnswerNotice(text="two"))
    assert [n.text for _, n in store.notices()] == ["one", "two"]
    assert [n.text for _, n in store.notices(after=one)] == ["two"]


def test_sessions_of_two_workspaces_never_share_keys(redis):
    a = SessionStore(redis, KEY)
    b = SessionStore(redis, SessionKey(team="T2", channel=KEY.channel, thread_ts=KEY.thread_ts))
    route_input(a, UserInput(text="for team one", user="U1", ts="1.4"))
    assert b.read_wire() == []
