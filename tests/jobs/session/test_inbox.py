from __future__ import annotations

from agent.wire import AppendMessage
from jobs.input import route_input
from jobs.keys import SessionKey
from jobs.session.inbox import change_of, edit_waiting, waiting, withdraw_waiting
from jobs.session.lease import Lease
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")


def busy_store(redis) -> SessionStore:
    store = SessionStore(redis, KEY)
    assert Lease.acquire(store, owner="test") is not None  # a turn runs: input waits in the inbox
    return store


def test_an_edit_replaces_only_the_waiting_message_it_names(redis):
    store = busy_store(redis)
    route_input(store, UserInput(text="one", user="U1", ts="1.1", event_id="E1"))
    route_input(store, UserInput(text="two", user="U2", ts="1.2"))
    assert edit_waiting(store, "1.2", 'zwei "ü" / <b>') is True
    assert [(i.text, i.user, i.ts, i.event_id) for i in waiting(store)] == [
        ("one", "U1", "1.1", "E1"),
        ('zwei "ü" / <b>', "U2", "1.2", None),
    ]


def test_a_delete_withdraws_the_waiting_message(redis):
    store = busy_store(redis)
    route_input(store, UserInput(text="keep", user="U1", ts="1.1"))
    route_input(store, UserInput(text="drop", user="U1", ts="1.2"))
    assert withdraw_waiting(store, "1.2") is True
    assert [i.text for i in waiting(store)] == ["keep"]
    assert withdraw_waiting(store, "1.2") is False


def test_a_message_already_read_is_reported_as_such(redis):
    store = SessionStore(redis, KEY)
    store.append(AppendMessage(message=UserInput(text="read", user="U1", ts="1.1").to_message()))
    assert change_of(store, "1.1", text="changed") == "already_read"
    assert change_of(store, "1.1", text=None) == "already_read"
    assert change_of(store, "9.9", text=None) == "unknown"
