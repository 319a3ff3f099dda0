import pytest
from redis import Redis
from rq import Queue
from rq.job import JobStatus
from rq.utils import import_attribute

from jobs.keys import SessionKey
from jobs.queues import (
    COMPACTION_JOB,
    DELIVERY_JOB,
    SERIALIZER,
    SLACK_QUEUE,
    TURN_JOB,
    TURN_TIMEOUT_GRACE_S,
    TURNS_QUEUE,
    clear_turn_flag,
    delivery_started,
    queue,
    schedule_delivery,
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


def test_notices_posted_together_enqueue_one_delivery(redis):
    assert schedule_delivery(redis, KEY) is True
    assert schedule_delivery(redis, KEY) is False  # the queued job will post this notice too
    assert [list(job.args) for job in queue(redis, SLACK_QUEUE).get_jobs()] == [[str(KEY)]]


def test_a_started_delivery_lets_the_next_notice_schedule_another(redis):
    schedule_delivery(redis, KEY)
    Queue.dequeue_any([queue(redis, SLACK_QUEUE)], None, connection=redis, serializer=SERIALIZER)
    delivery_started(redis, KEY)
    assert schedule_delivery(redis, KEY) is True


def test_a_notice_while_a_delivery_is_queued_costs_two_round_trips(redis):
    schedule_delivery(redis, KEY)
    sent = Counted(redis)
    queue(sent, SLACK_QUEUE).get_redis_server_version()  # asked once per client, then kept
    sent.round_trips = 0
    assert schedule_delivery(sent, KEY) is False
    assert sent.round_trips == 2  # the flag's claim and its job's place on the queue


def test_a_delivery_that_started_and_died_before_taking_the_notices_does_not_hold_up_the_next(redis):
    """A Redis failover (or a crash) right after the worker started the job, before the job took
    the flag: the turn's answer, posted a moment later, must still get a delivery."""
    schedule_delivery(redis, KEY)
    taken = Queue.dequeue_any([queue(redis, SLACK_QUEUE)], None, connection=redis, serializer=SERIALIZER)
    assert taken is not None
    taken[0].set_status(JobStatus.STARTED)  # as RQ's worker does before it runs the job
    assert schedule_delivery(redis, KEY) is True  # at once
    assert [list(job.args) for job in queue(redis, SLACK_QUEUE).get_jobs()] == [[str(KEY)]]


def test_a_delivery_whose_worker_died_before_starting_it_does_not_hold_up_the_next(redis):
    """A worker took the job off the queue and was killed before the job began (seen in the
    chaos test: the delivery worker died with the turn's). Nothing runs that job, so the answer
    posted a moment later must get a job of its own, not wait for a later notice."""
    schedule_delivery(redis, KEY)
    taken = Queue.dequeue_any([queue(redis, SLACK_QUEUE)], None, connection=redis, serializer=SERIALIZER)
    assert taken is not None  # a worker took it, then was killed before the job began
    assert schedule_delivery(redis, KEY) is True  # at once, however young the taken job is
    assert [list(job.args) for job in queue(redis, SLACK_QUEUE).get_jobs()] == [[str(KEY)]]


class Counted(Redis):
    """The test's Redis, counting the round trips it makes (a command or a pipeline each)."""

    def __init__(self, redis: Redis) -> None:
        super().__init__(connection_pool=redis.connection_pool)
        self.round_trips = 0

    def execute_command(self, *args, **options):  # type: ignore[no-untyped-def]
        self.round_trips += 1
        return super().execute_command(*args, **options)

    def pipeline(self, transaction=True, shard_hint=None):  # type: ignore[no-untyped-def]
        self.round_trips += 1
        return super().pipeline(transaction, shard_hint)


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
