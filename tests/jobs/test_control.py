import logging

import pytest
from prometheus_client import REGISTRY
from redis.exceptions import ResponseError
from rq import Queue

from agent.wire import AppendLoopEvent, StepBegin, ToolCallEvent
from jobs.control import cancel, decide_approval, resume, status, submit_input
from jobs.delegation.children import start
from jobs.janitor import CANCEL_BACKSTOP_S, CANCEL_RESEND_S, mark_interrupted, sweep
from jobs.keys import CANCELS_CHANNEL, RUNNING_SESSIONS, SessionKey, turn_queued_key, working_sessions_key
from jobs.log_context import RECORD_ATTRIBUTE, ContextFilter
from jobs.queues import TURNS_QUEUE, clear_turn_flag, queue
from jobs.quotas import Quota
from jobs.session.approvals import Approval, ApprovalStore
from jobs.session.lease import Lease
from jobs.session.state import latest_session, set_state
from jobs.session.store import SessionStore, now_ms
from jobs.session.user_input import UserInput
from jobs.turn.runner import after_turn

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000500")


def submit(redis, text="hi", ts="1700000000.000500", user="U1"):
    return submit_input(redis, KEY, UserInput(text=text, user=user, ts=ts), turn_timeout_s=60)


def test_cancelling_a_queued_turn_removes_its_job(redis):
    submit(redis)
    assert len(queue(redis, TURNS_QUEUE)) == 1
    result = cancel(redis, KEY, by="U1")
    assert result.ok
    assert len(queue(redis, TURNS_QUEUE)) == 0
    store = SessionStore(redis, KEY)
    assert store.meta.read().state == "cancelled"
    assert [r["type"] for r in store.read_wire()][-2:] == ["turn.cancel", "turn.ended"]
    assert [n.kind for _, n in store.notices()] == ["cancelled"]


def test_cancel_with_nothing_running_says_so(redis):
    assert cancel(redis, KEY, by="U1").message == "Nothing is running in that thread."


def test_resume_only_from_a_stopped_state(redis):
    submit(redis)
    assert not resume(redis, KEY, by="U1", turn_timeout_s=60).ok  # queued
    store = SessionStore(redis, KEY)
    set_state(store, "idle")
    assert "Nothing to resume" in resume(redis, KEY, by="U1", turn_timeout_s=60).message
    set_state(store, "interrupted")
    redis.delete(turn_queued_key(KEY))
    assert resume(redis, KEY, by="U1", turn_timeout_s=60).ok
    assert store.meta.read().state == "queued" and store.meta.read().resume_requested == "U1"


def test_a_resume_counts_among_the_sessions_working_and_forgets_those_that_ended(redis):
    working = Quota(key=working_sessions_key("T1", "U2"), limit=1, window_s=60, refusal="too many")
    other = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000900")
    redis.zadd(working.key, {str(other): 1})
    set_state(SessionStore(redis, other), "awaiting_approval")
    set_state(SessionStore(redis, KEY), "interrupted")

    refused = resume(redis, KEY, by="U2", turn_timeout_s=60, working=working)
    assert not refused.ok and refused.message.startswith("Not resumed: you already have 1 session working")
    assert SessionStore(redis, KEY).meta.read().state == "interrupted" and len(queue(redis, TURNS_QUEUE)) == 0

    set_state(SessionStore(redis, other), "idle")
    assert resume(redis, KEY, by="U2", turn_timeout_s=60, working=working).ok
    assert redis.zrange(working.key, 0, -1) == [str(KEY).encode()]


def test_the_janitor_names_each_call_without_a_result_once(redis):
    store = SessionStore(redis, KEY)
    submit(redis)
    store.append(AppendLoopEvent(event=StepBegin(uuid="s1")))
    for call_id in ("a", "b"):
        call = ToolCallEvent(
            step_uuid="s1", tool_call_id=call_id, name="shell", args={"command": f"make {call_id}"}
        )
        store.append(AppendLoopEvent(event=call))
    set_state(store, "running", turn_id="t1")
    counted = REGISTRY.get_sample_value("threadline_unknown_results_total") or 0.0
    mark_interrupted(store)
    mark_interrupted(store)  # a second sweep must not repeat the notices (nor count them again)
    assert REGISTRY.get_sample_value("threadline_unknown_results_total") == counted + 2
    unknown = [n for _, n in store.notices() if n.kind == "unknown_result"]
    assert [(n.tool_call_id, n.summary) for n in unknown] == [
        ("a", "command: make a"),
        ("b", "command: make b"),
    ]
    assert store.meta.read().state == "interrupted"


def test_status_and_latest_session(redis):
    submit(redis, user="U7")
    assert status(redis, KEY).state == "queued" and status(redis, KEY).owner == "U7"
    assert latest_session(redis, "T1", "C1", "U7") == KEY
    assert latest_session(redis, "T1", "C1", "U8") is None


def _wire_users(store: SessionStore) -> list[str]:
    return [r["message"]["origin"]["ts"] for r in store.read_wire() if r["type"] == "context.append_message"]


def test_input_to_an_idle_session_claims_one_turn_however_many_arrive(redis):
    store = SessionStore(redis, KEY)
    assert submit(redis, ts="1700000000.000500") == "wire"
    assert submit(redis, ts="1700000001.000500") == "wire"

    flag = redis.get(turn_queued_key(KEY)).decode()
    assert queue(redis, TURNS_QUEUE).job_ids == [f"turn-{flag}"]
    assert store.meta.read().state == "queued"
    assert _wire_users(store) == ["1700000000.000500", "1700000001.000500"]


def test_input_while_a_worker_holds_the_session_waits_in_its_inbox(redis):
    store = SessionStore(redis, KEY)
    redis.set(store.lease_key, "worker-1")
    assert submit(redis) == "inbox"
    assert queue(redis, TURNS_QUEUE).job_ids == [] and _wire_users(store) == []
    assert [i.ts for i in store.peek_inbox()] == ["1700000000.000500"]


def test_input_to_a_parked_session_is_recorded_and_waits_for_the_decision(redis):
    store = SessionStore(redis, KEY)
    set_state(store, "awaiting_approval")
    assert submit(redis) == "wire"
    assert store.meta.read().state == "awaiting_approval"
    assert queue(redis, TURNS_QUEUE).job_ids == [] and not redis.exists(turn_queued_key(KEY))


def test_a_failed_enqueue_keeps_the_input_and_the_next_message_claims_the_turn(redis):
    store = SessionStore(redis, KEY)
    set_state(store, "cancelled")
    redis.set(queue(redis, TURNS_QUEUE).key, "not a list")  # RQ's push fails with WRONGTYPE
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        submit(redis)
    assert _wire_users(store) == ["1700000000.000500"]
    # Claimed, not enqueued: `queued` for the janitor's lost-turn check, the flag given back.
    assert store.meta.read().state == "queued" and not redis.exists(turn_queued_key(KEY))

    redis.delete(queue(redis, TURNS_QUEUE).key)  # Redis is well again
    assert submit(redis, ts="1700000000.000600") == "wire"
    assert len(queue(redis, TURNS_QUEUE).job_ids) == 1


def test_the_janitors_lines_about_a_session_name_its_thread_turn_and_job(redis):
    store = SessionStore(redis, KEY)
    submit(redis)
    set_state(store, "running", turn_id="t1", job="turn-abc")
    redis.sadd(RUNNING_SESSIONS, str(KEY))  # as the lease did; the lease itself is gone
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.addFilter(ContextFilter())
    handler.emit = records.append  # type: ignore[method-assign]  # keep the records as they are
    logging.getLogger("jobs.janitor").addHandler(handler)
    try:
        assert sweep(redis) == [KEY]
    finally:
        logging.getLogger("jobs.janitor").removeHandler(handler)
    [interrupted] = [r for r in records if "worker gone" in r.getMessage()]
    assert getattr(interrupted, RECORD_ATTRIBUTE) == {
        "team": "T1",
        "channel": "C1",
        "thread": str(KEY),
        "turn": "t1",
        "job": "turn-abc",
    }


def _a_running_turn_that_ignores_its_cancel(redis, asked_s_ago: float) -> Lease:
    """A turn holding its lease (renewed, as its heartbeat thread does while the turn's loop is
    stuck) that was asked to stop `asked_s_ago`."""
    store = SessionStore(redis, KEY)
    submit(redis)
    set_state(store, "running", turn_id="t1", job="turn-abc")
    lease = Lease.acquire(store, owner="worker-1")
    assert lease is not None
    assert cancel(redis, KEY, by="U9").ok
    store.meta.note_cancel_asked(now_ms() - int(asked_s_ago * 1000))
    return lease


def test_a_turn_ignoring_a_cancel_past_the_backstop_loses_its_lease_and_the_session_ends_cancelled(redis):
    lease = _a_running_turn_that_ignores_its_cancel(redis, CANCEL_BACKSTOP_S + 1)
    assert sweep(redis) == [KEY]
    assert not lease.renew() and lease.in_doubt()  # the stuck turn writes nothing more
    store = SessionStore(redis, KEY)
    assert store.meta.read().state == "cancelled"
    assert [n.text for _, n in store.notices() if n.kind == "cancelled"] == ["Stopped by <@U9>."]


def test_a_cancel_younger_than_the_backstop_is_left_to_the_turn(redis):
    lease = _a_running_turn_that_ignores_its_cancel(redis, CANCEL_BACKSTOP_S - 5)
    assert sweep(redis) == []
    assert lease.renew()
    assert SessionStore(redis, KEY).meta.read().state == "running"


def listening(pubsub):
    pubsub.subscribe(CANCELS_CHANNEL)
    assert pubsub.get_message(timeout=5)["type"] == "subscribe"  # subscribed before anything is sent
    return pubsub


def published_cancels(pubsub, *, within_s: float = 2.0) -> list[str]:
    """This test's session keys published on the cancels channel (pub/sub spans every database,
    so other tests' cancels pass by too), until one wait of `within_s` hears nothing."""
    heard = []
    while (message := pubsub.get_message(timeout=within_s)) is not None:
        heard.append(message["data"].decode())
    return [key for key in heard if key == str(KEY)]


def test_a_cancel_is_published_for_the_process_running_the_turn(redis):
    store = SessionStore(redis, KEY)
    submit(redis)
    set_state(store, "running", turn_id="t1", job="turn-abc")
    with listening(redis.pubsub()) as pubsub:
        assert cancel(redis, KEY, by="U9").ok
        assert published_cancels(pubsub) == [str(KEY)]


@pytest.mark.parametrize(("asked_s_ago", "sent_again"), [(CANCEL_RESEND_S + 1, True), (0, False)])
def test_a_cancel_still_unheard_is_published_again_by_the_janitor(redis, asked_s_ago, sent_again):
    lease = _a_running_turn_that_ignores_its_cancel(redis, asked_s_ago)
    with listening(redis.pubsub()) as pubsub:
        assert sweep(redis) == []
        assert published_cancels(pubsub, within_s=0.5) == ([str(KEY)] if sent_again else [])
    assert lease.renew()  # not yet the backstop: the turn keeps its lease


@pytest.fixture
def taken_at_once(redis, monkeypatch):  # type: ignore[no-untyped-def]
    """RQ's enqueue, followed at once by a worker taking the job and marking the turn running,
    before the enqueuing code goes on (what a fast worker does on a busy machine)."""
    enqueue = Queue.enqueue

    def enqueue_then_start(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        job = enqueue(self, *args, **kwargs)
        if self.name == TURNS_QUEUE:
            set_state(SessionStore(redis, SessionKey.parse(str(args[1]))), "running", turn_id="t", job=job.id)
        return job

    monkeypatch.setattr(Queue, "enqueue", enqueue_then_start)


def test_a_resumed_turn_taken_at_once_stays_running_and_a_cancel_reaches_it(redis, taken_at_once):
    store = SessionStore(redis, KEY)
    set_state(store, "cancelled")

    assert resume(redis, KEY, by="U1", turn_timeout_s=60).ok

    assert store.meta.read().state == "running"  # not written over by "queued" after the job started
    assert "Stopping the running turn" in cancel(redis, KEY, by="U1").message


def test_a_sub_agent_taken_at_once_stays_running(redis, taken_at_once):
    child = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000500-a1")
    store = SessionStore(redis, child)
    set_state(store, "idle")

    start(store, turn_timeout_s=60)

    assert store.meta.read().state == "running"


def test_a_decision_that_lands_while_the_parking_turn_still_holds_the_session_is_not_lost(redis):
    """The approval card is in the thread before the turn that parked has written its state and
    given the session back. A click then queues the continuation, whose job finds the session
    leased and leaves word; the parking turn then writes `awaiting_approval` over `queued`. When it
    gives the session back, the decided step must still go on, or the thread waits forever."""
    store = SessionStore(redis, KEY)
    approvals = ApprovalStore(store)
    parking = Lease.acquire(store, owner="turn")  # the turn that parks, still ending
    set_state(store, "running")
    store.meta.park_step("s1")
    approvals.park(
        [Approval(approval_id="a1", tool_call_id="c1", tool_name="shell", summary="ls", step_uuid="s1")]
    )

    assert decide_approval(redis, KEY, "a1", "approved", by="U1", turn_timeout_s=60).ok
    [continuation] = queue(redis, TURNS_QUEUE).jobs
    continuation.delete()  # taken by a worker, which does what run_turn does first, and returns "busy"
    clear_turn_flag(redis, KEY)
    assert Lease.acquire_or_ask(store, owner="turn") is None

    set_state(store, "awaiting_approval")  # the parking turn's own end, after the click
    moved = parking.hand_back()
    after_turn(store, moved, "awaiting_approval")

    [again] = queue(redis, TURNS_QUEUE).jobs
    assert again.func_name == "jobs.turn.runner.run_turn" and list(again.args) == [str(KEY)]
