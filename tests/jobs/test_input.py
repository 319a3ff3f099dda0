"""jobs.input: a message recorded in one script, and the turn it claims enqueued through RQ after it.

A process that dies between the claim and the enqueue, or whose enqueue fails, leaves a `queued`
session with no job: the janitor's lost-turn check queues it, once, after its grace.
"""

from __future__ import annotations

import json

import pytest
from redis import Redis
from redis.exceptions import ResponseError
from rq.job import Job

from agent.fold import fold
from jobs import runtime
from jobs.input import TurnClaimed, _literal, claim_input, record_input, route_input, script_text
from jobs.janitor import JANITOR_LOCK, sweep
from jobs.keys import (
    QUEUED_SESSIONS,
    SessionKey,
    dedupe_key,
    early_replies_key,
    meta_key,
    recent_session_key,
    turn_queued_key,
)
from jobs.queues import SERIALIZER, TURN_JOB, TURNS_QUEUE, queue, turn_job_id
from jobs.session.dedupe import DEDUPE_TTL_S, delivery_keys
from jobs.session.early import EARLY_REPLY_TTL_S, change_held
from jobs.session.state import PARKED_STATES, latest_session
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")


def record(redis: Redis, ts: str = "1700000000.000100", event_id: str = "Ev1", **options: object) -> str:
    keys = delivery_keys(KEY.team, event_id, KEY.channel, ts)
    return record_input(
        redis, KEY, said_at(ts, event_id), turn_timeout_s=60, parked=PARKED_STATES, dedupe_keys=keys,
        dedupe_ttl_s=DEDUPE_TTL_S, **options,  # type: ignore[arg-type]  # options are record_input's own
    )  # fmt: skip


def said_at(ts: str = "1700000000.000100", event_id: str = "Ev1") -> UserInput:
    return UserInput(text=f"said at {ts}", user="U1", ts=ts, event_id=event_id)


def wire_inputs(redis: Redis) -> list[str]:
    records = SessionStore(redis, KEY).read_wire()
    return [r["message"]["origin"]["ts"] for r in records if r["type"] == "context.append_message"]


def queued_jobs(redis: Redis) -> list[Job]:
    return [
        Job.fetch(job_id, connection=redis, serializer=SERIALIZER)
        for job_id in queue(redis, TURNS_QUEUE).job_ids
    ]


def test_a_new_mention_is_recorded_and_its_turn_enqueued_through_rq(redis: Redis) -> None:
    assert record(redis) == "wire"

    assert wire_inputs(redis) == ["1700000000.000100"]
    [job] = queued_jobs(redis)
    assert (job.func_name, list(job.args), job.origin) == (TURN_JOB, [str(KEY)], TURNS_QUEUE)
    assert job.get_status() == "queued"
    assert job.id == f"turn-{redis.get(turn_queued_key(KEY)).decode()}"
    assert queue(redis, TURNS_QUEUE) in queue(redis, TURNS_QUEUE).all(connection=redis)
    meta = SessionStore(redis, KEY).meta.read()
    assert (meta.state, meta.owner) == ("queued", "U1")
    assert latest_session(redis, KEY.team, KEY.channel, "U1") == KEY


def test_a_retry_and_the_message_twin_are_duplicates_and_change_nothing(redis: Redis) -> None:
    record(redis)
    jobs_before = queue(redis, TURNS_QUEUE).job_ids

    assert record(redis) == "duplicate"  # Slack's retry: same event id
    assert record(redis, event_id="EvTwin") == "duplicate"  # `message` twin: same channel and ts
    assert wire_inputs(redis) == ["1700000000.000100"]
    assert queue(redis, TURNS_QUEUE).job_ids == jobs_before


def test_an_ignored_follow_up_needs_a_session_and_claims_nothing_without_one(redis: Redis) -> None:
    assert record(redis, without_session="ignore") == "no session"
    assert not redis.keys(dedupe_key("*")) and not redis.exists(meta_key(KEY))

    assert record(redis) == "wire"  # the same message as a mention is still new
    assert record(redis, ts="1700000001.000100", event_id="Ev2", without_session="ignore") == "wire"
    assert wire_inputs(redis) == ["1700000000.000100", "1700000001.000100"]
    assert len(queue(redis, TURNS_QUEUE).job_ids) == 1  # one turn for both


def hold(redis: Redis, ts: str, event_id: str) -> str:
    return record(redis, ts=ts, event_id=event_id, without_session="hold")


def test_a_reply_before_its_session_is_held_with_its_claim_and_starts_nothing(redis: Redis) -> None:
    assert hold(redis, "1700000000.000300", "EvR") == "held"

    assert redis.hkeys(early_replies_key(KEY)) == [b"1700000000.000300"]
    assert 0 < redis.ttl(early_replies_key(KEY)) <= EARLY_REPLY_TTL_S
    assert not redis.exists(meta_key(KEY)) and wire_inputs(redis) == []
    assert queue(redis, TURNS_QUEUE).job_ids == []
    assert hold(redis, "1700000000.000300", "EvR") == "duplicate"  # Slack's retry
    assert redis.hlen(early_replies_key(KEY)) == 1


def test_the_first_input_folds_the_later_held_replies_in_after_it_in_ts_order(redis: Redis) -> None:
    hold(redis, "1700000000.000300", "EvR3")
    hold(redis, "1700000000.000050", "EvR0")  # older than the mention: talk before the agent was asked
    hold(redis, "1700000000.000200", "EvR2")
    hold(redis, "1700000010.000000", "EvR9")  # more digits of seconds apart, still ordered

    assert record(redis) == "wire"

    assert wire_inputs(redis) == [
        "1700000000.000100", "1700000000.000200", "1700000000.000300", "1700000010.000000",
    ]  # fmt: skip
    assert not redis.exists(early_replies_key(KEY))
    assert len(queue(redis, TURNS_QUEUE).job_ids) == 1  # one turn for all of them
    assert hold(redis, "1700000000.000300", "EvR3") == "duplicate"  # a retry after the fold
    assert record(redis, ts="1700000000.000400", event_id="EvR4", without_session="hold") == "wire"
    assert wire_inputs(redis)[-1] == "1700000000.000400"  # once the session exists, replies are input


def test_the_first_input_into_a_leased_session_folds_the_held_replies_into_the_inbox(redis: Redis) -> None:
    hold(redis, "1700000000.000200", "EvR2")
    redis.set(SessionStore(redis, KEY).lease_key, "worker-1")

    assert record(redis) == "inbox"
    assert [i.ts for i in SessionStore(redis, KEY).peek_inbox()] == ["1700000000.000100", "1700000000.000200"]


def test_held_replies_past_their_time_are_dropped_not_folded(redis: Redis) -> None:
    hold(redis, "1700000000.000200", "EvR2")
    held = json.loads(redis.hget(early_replies_key(KEY), "1700000000.000200"))
    held["at"] = str(int(held["at"]) - 1000 * EARLY_REPLY_TTL_S - 1)
    redis.hset(early_replies_key(KEY), "1700000000.000200", json.dumps(held))
    hold(redis, "1700000000.000300", "EvR3")

    assert redis.hkeys(early_replies_key(KEY)) == [b"1700000000.000300"]  # a new hold prunes it
    redis.hset(early_replies_key(KEY), "1700000000.000200", json.dumps(held))
    record(redis)
    assert wire_inputs(redis) == ["1700000000.000100", "1700000000.000300"]


def test_a_held_reply_can_be_edited_or_withdrawn_until_the_fold(redis: Redis) -> None:
    hold(redis, "1700000000.000200", "EvR2")
    hold(redis, "1700000000.000300", "EvR3")

    assert change_held(redis, KEY, "1700000000.000200", "said again")
    assert change_held(redis, KEY, "1700000000.000300", None)
    assert not change_held(redis, KEY, "1700000000.000900", "never held")
    record(redis)

    texts = [m.text() for m in fold(SessionStore(redis, KEY).read_wire()) if m.role == "user"]
    assert texts == ["<@U1>: said at 1700000000.000100", "<@U1>: said again"]
    assert not change_held(redis, KEY, "1700000000.000200", "too late")  # folded: the inbox's business


def test_input_while_a_turn_runs_goes_to_the_inbox_without_a_job(redis: Redis) -> None:
    redis.set(SessionStore(redis, KEY).lease_key, "worker-1")
    assert record(redis) == "inbox"
    assert [i.ts for i in SessionStore(redis, KEY).peek_inbox()] == ["1700000000.000100"]
    assert queue(redis, TURNS_QUEUE).job_ids == [] and wire_inputs(redis) == []


def sweep_at(redis: Redis, at_ms: int) -> None:
    """A janitor sweep judging ages at `at_ms`; each call is the next sweep (of any worker)."""
    redis.delete(JANITOR_LOCK)
    sweep(redis, at_ms=at_ms)


def grace_ms() -> int:
    """How long a claim stays `queued` with no job before the janitor calls its turn lost."""
    return int(runtime.settings().LEASE_TTL_SECONDS * 1000)


def test_a_claim_whose_enqueue_never_came_is_queued_once_by_the_janitor_after_its_grace(redis: Redis) -> None:
    keys = delivery_keys(KEY.team, "Ev1", KEY.channel, "1700000000.000100")
    claimed = claim_input(
        redis, KEY, said_at(), parked=PARKED_STATES, dedupe_keys=keys, dedupe_ttl_s=DEDUPE_TTL_S
    )
    # The web process dies here, before RQ's enqueue: the flag is held, no job, no lease.
    assert isinstance(claimed, TurnClaimed) and redis.get(turn_queued_key(KEY)) == claimed.token.encode()
    store = SessionStore(redis, KEY)
    assert store.meta.read().state == "queued" and redis.sismember(QUEUED_SESSIONS, str(KEY))
    assert queued_jobs(redis) == [] and not redis.exists(store.lease_key)
    claimed_at = store.meta.read().updated
    assert claimed_at is not None

    sweep_at(redis, claimed_at + grace_ms() - 1)  # a live process may still be about to enqueue
    assert queued_jobs(redis) == []
    sweep_at(redis, claimed_at + grace_ms())

    [job] = queued_jobs(redis)
    assert (job.func_name, list(job.args)) == (TURN_JOB, [str(KEY)])
    assert job.id == turn_job_id(redis.get(turn_queued_key(KEY)).decode())  # the flag names its job
    sweep_at(redis, claimed_at + 10 * grace_ms())  # the job waits on the queue: nothing more
    assert record(redis) == "duplicate"  # Slack's retry of the mention
    assert record(redis, ts="1700000001.000100", event_id="Ev2") == "wire"  # joins the queued turn
    assert [j.id for j in queued_jobs(redis)] == [job.id]
    assert wire_inputs(redis) == ["1700000000.000100", "1700000001.000100"]


def test_a_failed_enqueue_keeps_the_input_gives_the_flag_back_and_the_janitor_queues_the_turn(
    redis: Redis,
) -> None:
    redis.set(queue(redis, TURNS_QUEUE).key, "not a list")  # RQ's push fails with WRONGTYPE

    with pytest.raises(ResponseError, match="WRONGTYPE"):
        record(redis)

    assert wire_inputs(redis) == ["1700000000.000100"]
    meta = SessionStore(redis, KEY).meta.read()
    assert meta.state == "queued" and not redis.exists(turn_queued_key(KEY))  # not held for 6 hours
    assert record(redis) == "duplicate"  # Slack's retry does not record it twice, nor enqueue
    assert wire_inputs(redis) == ["1700000000.000100"]
    redis.delete(queue(redis, TURNS_QUEUE).key)  # Redis is well again
    assert meta.updated is not None
    sweep_at(redis, meta.updated + grace_ms())
    [job] = queued_jobs(redis)
    assert (job.func_name, list(job.args)) == (TURN_JOB, [str(KEY)])


def test_routing_uses_the_same_script_and_does_nothing_else(redis: Redis) -> None:
    store = SessionStore(redis, KEY)
    assert route_input(store, UserInput(text="an answer", user="agent", ts="agent:a1:c1")) == "wire"
    redis.set(store.lease_key, "worker-1")
    assert route_input(store, UserInput(text="steer", user="agent", ts="agent:a1:c2")) == "inbox"

    assert wire_inputs(redis) == ["agent:a1:c1"] and [i.ts for i in store.peek_inbox()] == ["agent:a1:c2"]
    meta = store.meta.read()
    assert meta.created is not None and (meta.owner, meta.state) == (None, "idle")
    assert not redis.exists(turn_queued_key(KEY), recent_session_key(KEY.team, KEY.channel, "agent"))
    assert queue(redis, TURNS_QUEUE).job_ids == []


def test_the_script_has_every_name_spelled_in() -> None:
    assert "$" not in script_text()


@pytest.mark.parametrize(
    "value",
    [
        "",
        "queued",
        "604800",
        "jobs.turn.runner.run_turn('T1:C1:1.2')",
        'a"b\\c\n',
        "é 1",
        bytes(range(256)),
        b"\x011",  # an escape followed by a digit
    ],
)
def test_names_written_into_the_script_read_back_byte_for_byte(redis: Redis, value: str | bytes) -> None:
    expected = value.encode() if isinstance(value, str) else value
    assert redis.eval(f"return {_literal(value)}", 0) == expected
