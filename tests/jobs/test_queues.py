import pytest
from rq.utils import import_attribute

from jobs.keys import SessionKey
from jobs.queues import (
    COMPACTION_JOB,
    DELIVERY_JOB,
    TURN_JOB,
    TURN_TIMEOUT_GRACE_S,
    TURNS_QUEUE,
    clear_turn_flag,
    queue,
    schedule_turn,
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
