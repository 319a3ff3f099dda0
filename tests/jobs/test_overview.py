"""What `threadline status` reads for the whole system (jobs.overview), from a real Redis with no
worker running: a new session's input waits, queued, and its turn job waits on `turns`."""

from __future__ import annotations

from redis import Redis

from jobs.control import submit_input
from jobs.keys import SessionKey
from jobs.overview import overview
from jobs.queues import TURNS_QUEUE
from jobs.session.user_input import UserInput

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000700")


def test_a_new_session_shows_queued_with_its_waiting_turn_job(redis: Redis):
    submit_input(redis, KEY, UserInput(text="go", user="U1", ts=KEY.thread_ts), turn_timeout_s=60)

    found = overview(redis)

    (row,) = found.sessions
    assert (row.key, row.state, row.owner, row.worker) == (str(KEY), "queued", "U1", None)
    turns = {queue.name: queue for queue in found.queues}[TURNS_QUEUE]
    assert turns.waiting == 1 and turns.oldest_s is not None and turns.running == 0
    assert found.oldest_waiting_input is not None and found.oldest_waiting_input.session == str(KEY)
    assert found.workers == []
