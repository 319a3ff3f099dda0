"""Log lines name their team, channel, thread, turn and job (jobs.log_context)."""

from __future__ import annotations

import logging
import threading

import pytest

from jobs import log_context
from jobs.keys import SessionKey


def test_bound_fields_nest_and_end_with_their_block() -> None:
    with log_context.bound(team="T1", channel="C1"):
        with log_context.bound(turn="t-1", channel=None):
            assert dict(log_context.current()) == {"team": "T1", "channel": "C1", "turn": "t-1"}
        assert dict(log_context.current()) == {"team": "T1", "channel": "C1"}
    assert dict(log_context.current()) == {}


def test_a_bind_lasts_until_its_scope_ends_and_does_nothing_outside_one() -> None:
    key = SessionKey(team="T1", channel="C1", thread_ts="1700.1")
    log_context.bind(thread="T9:C9:1.0")
    assert dict(log_context.current()) == {}
    with log_context.scope(team="T1"):
        log_context.bind(**log_context.session_fields(key))
        assert log_context.current()["thread"] == "T1:C1:1700.1"
    assert dict(log_context.current()) == {}


def test_an_unknown_field_is_refused_and_a_long_value_cut_short() -> None:
    with pytest.raises(ValueError, match="user"):
        log_context.bind(user="U1")
    with log_context.bound(job="j" * 10_000):
        assert len(log_context.current()["job"]) == log_context.MAX_VALUE_CHARS


def test_a_thread_started_with_in_context_carries_the_callers_fields() -> None:
    seen: list[dict[str, str]] = []
    with log_context.bound(thread="T1:C1:1.0", job="j1"):

        def note() -> None:
            seen.append(dict(log_context.current()))

        carried = threading.Thread(target=log_context.in_context(note))
        bare = threading.Thread(target=note)
    for thread in (carried, bare):
        thread.start()
        thread.join()
    assert seen == [{"thread": "T1:C1:1.0", "job": "j1"}, {}]


def test_the_filter_puts_the_fields_on_every_record() -> None:
    record = logging.LogRecord("agent.tools.executor", logging.WARNING, __file__, 1, "crashed", None, None)
    with log_context.bound(turn="t-1"):
        assert log_context.ContextFilter().filter(record)
    assert getattr(record, log_context.RECORD_ATTRIBUTE) == {"turn": "t-1"}
