"""A step parked on sub-agents: who goes on, and when (real Redis, no workers: queues observed)."""

from __future__ import annotations

from agent.messages import ToolCall
from agent.tools.base import ToolResult
from jobs.delegation.waits import StepWaits
from jobs.keys import SessionKey
from jobs.queues import TURNS_QUEUE, queue
from jobs.session.store import SessionStore

KEY = SessionKey(team="T1", channel="C1", thread_ts="1.1")


def call(call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name="Agent", arguments="{}")


def queued_turns(redis) -> int:
    return queue(redis, TURNS_QUEUE).count


def test_the_last_answer_after_the_park_enqueues_the_continuation(redis):
    waits = StepWaits(SessionStore(redis, KEY))
    waits.expect("a1")
    waits.expect("a2")
    assert waits.arm("t-s1", [call("a1"), call("a2")]) is None
    assert not waits.complete("a1", ToolResult("one"), turn_timeout_s=60)
    assert queued_turns(redis) == 0
    assert waits.complete("a2", ToolResult("two", is_error=True), turn_timeout_s=60)
    assert queued_turns(redis) == 1
    parked = waits.parked()
    assert parked is not None and parked.step_uuid == "t-s1"
    assert {k: (r.text(), r.is_error) for k, r in parked.results.items()} == {
        "a1": ("one", False),
        "a2": ("two", True),
    }


def test_answers_before_the_park_go_on_in_the_same_worker(redis):
    waits = StepWaits(SessionStore(redis, KEY))
    waits.expect("a1")
    assert not waits.complete("a1", ToolResult("early"), turn_timeout_s=60)  # not armed: nobody to wake
    ready = waits.arm("t-s1", [call("a1")])
    assert ready is not None and ready["a1"].text() == "early"
    assert queued_turns(redis) == 0


def test_a_late_answer_for_a_cleared_wait_is_ignored(redis):
    waits = StepWaits(SessionStore(redis, KEY))
    waits.expect("a1")
    waits.arm("t-s1", [call("a1")])
    waits.clear()
    assert not waits.complete("a1", ToolResult("late"), turn_timeout_s=60)
    assert waits.parked() is None and queued_turns(redis) == 0


def test_a_new_step_replaces_what_a_finished_step_left(redis):
    waits = StepWaits(SessionStore(redis, KEY))
    waits.expect("a1")
    waits.complete("a1", ToolResult("done"), turn_timeout_s=60)
    assert waits.arm("t-s1", [call("a1")]) is not None  # went on in the same turn
    waits.expect("b1")  # the next step delegates again
    assert waits.pending_calls() == ["b1"] and waits.parked() is None
