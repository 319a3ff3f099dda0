import pytest
from rq.utils import import_attribute, now, utcparse

from jobs.keys import SessionKey
from jobs.queues import (
    COMPACTION_JOB,
    DELIVERY_JOB,
    FAILURE_TTL_S,
    TURN_JOB,
    TURN_TIMEOUT_GRACE_S,
    TURNS_QUEUE,
    clear_turn_flag,
    queue,
    schedule_turn,
    turn_job,
)

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000200")


def test_two_inputs_arriving_together_enqueue_one_turn(redis):
    assert schedule_turn(redis, KEY, turn_timeout_s=60) is True
    assert schedule_turn(redis, KEY, turn_timeout_s=60) is False
    jobs = queue(redis, TURNS_QUEUE).get_jobs()
    assert [list(job.args) for job in jobs] == [[str(KEY)]]


def test_turn_jobs_get_the_configured_timeout_and_no_retry(redis):
    schedule_turn(redis, KEY, turn_timeout_s=3600)
    job = queue(redis, TURNS_QUEUE).get_jobs()[0]
    assert job.timeout == 3600 + TURN_TIMEOUT_GRACE_S
    assert job.retries_left is None


def test_a_started_turn_lets_the_next_input_schedule_another(redis):
    schedule_turn(redis, KEY, turn_timeout_s=60)
    clear_turn_flag(redis, KEY)  # what run_turn does first
    assert schedule_turn(redis, KEY, turn_timeout_s=60) is True


@pytest.mark.parametrize("timeout", [60, 3600])
def test_a_turn_job_is_what_rq_itself_builds_for_that_turn(redis, timeout):
    ours = turn_job(redis, KEY, "abc123", turn_timeout_s=timeout)
    rqs = queue(redis, TURNS_QUEUE).create_job(
        TURN_JOB, args=(str(KEY),), job_id="turn-abc123", timeout=timeout + TURN_TIMEOUT_GRACE_S,
        result_ttl=0, failure_ttl=FAILURE_TTL_S,
    )  # fmt: skip
    rqs.enqueued_at = now()
    stored = {name: value for name, value in rqs.to_dict().items() if value is not None}
    expected = {
        name: v if isinstance(v, bytes | str) else str(v) for name, v in stored.items()
    }  # as Redis holds them
    fields = ours.fields

    assert set(fields) == set(expected)
    assert len(ours.shared) + len(ours.own) == len(fields)  # no field twice
    stamps = ("created_at", "enqueued_at")
    assert {n: v for n, v in fields.items() if n not in stamps} == {
        n: v for n, v in expected.items() if n not in stamps
    }
    for name in stamps:  # made a moment apart: both now, in RQ's format
        assert abs(utcparse(fields[name]) - utcparse(expected[name])).total_seconds() < 5
    assert (ours.id, ours.key) == (rqs.id, rqs.key)


# Jobs already in Redis name their function as they were enqueued; RQ resolves Job.func_name
# with rq.utils.import_attribute, so every name ever stored must still resolve, to the same function.
@pytest.mark.parametrize(
    ("stored", "current"),
    [
        ("jobs.turn.run_turn", TURN_JOB),
        ("gateway.delivery.deliver", DELIVERY_JOB),
        ("jobs.compaction_job.run_manual_compaction", COMPACTION_JOB),
    ],
)
def test_job_names_already_queued_resolve_to_the_current_function(stored, current):
    assert import_attribute(stored) is import_attribute(current)
