"""A cancel is pushed to the process running the turn (jobs.turn.cancels): with 16 turns running on
one default worker, a Stop sent through Slack reaches each within 1 s, and a cancel whose
wake-up was lost is published again by the janitor and lands within 1 s of its sweep.

Times are Redis's own: the turn's `turn.cancel` record id carries the server's clock in ms."""

from __future__ import annotations

import threading
from typing import Any

from redis import Redis

from agent.testing import text
from jobs.janitor import CANCEL_RESEND_S, sweep
from jobs.keys import JANITOR_LOCK, cancel_key
from jobs.session.store import now_ms
from tests.e2e.sessions import link, slash_command
from tests.e2e.turns import Session
from tests.polling import wait_for

AT_ONCE = 16
HEARD_WITHIN_MS = 1000


def server_ms(redis: Redis) -> int:
    seconds, micros = redis.time()
    return int(seconds) * 1000 + int(micros) // 1000


def cancel_recorded_ms(session: Session) -> int | None:
    """When the turn recorded its own cancel (the loop's `turn.cancel` of an active turn)."""
    for record in session.wire():
        if record["type"] == "turn.cancel" and record.get("target") == "active":
            return int(str(record["id"]).split("-")[0])
    return None


def running_turns(
    make_stack: Any, fake_slack: Any, fake_llm: Any, redis: Redis, **env: str
) -> tuple[Any, list[Session], threading.Event]:
    """AT_ONCE turns of one worker process, each waiting on its model call until `release`."""
    release = threading.Event()
    asked: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> Any:
        asked.append(body)
        release.wait(120)
        return text("too late")

    fake_llm.default = model
    stack = make_stack(TURN_CONCURRENCY=str(AT_ONCE), **env)
    sessions = [Session(redis, fake_slack, f"job {index}") for index in range(AT_ONCE)]
    wait_for(lambda: len(asked) >= AT_ONCE, timeout=60, what="every turn's model request")
    return stack, sessions, release


def test_a_stop_through_slack_reaches_each_of_16_running_turns_within_a_second(
    make_stack, fake_slack, fake_llm, redis
):
    stack, sessions, release = running_turns(make_stack, fake_slack, fake_llm, redis)
    try:
        for session in sessions:
            asked_at = server_ms(redis)
            answer = slash_command(stack, fake_slack, f"cancel {link(fake_slack, session.key)}")
            assert "Stopping" in answer
            wait_for(lambda s=session: cancel_recorded_ms(s) is not None, timeout=10, what="the cancel")
            heard = cancel_recorded_ms(session)
            assert heard is not None and heard - asked_at <= HEARD_WITHIN_MS, (heard, asked_at)
        for session in sessions:
            wait_for(lambda s=session: s.state() == "cancelled", what="each turn to end cancelled")
    finally:
        release.set()


def test_a_cancel_whose_wake_up_was_lost_is_sent_again_by_the_janitor(
    make_stack, fake_slack, fake_llm, redis
):
    # The worker's own janitor sweeps rarely here, so the sweep that re-sends is this test's.
    _, sessions, release = running_turns(
        make_stack, fake_slack, fake_llm, redis, JANITOR_INTERVAL_SECONDS="3600"
    )
    try:
        lost = sessions[3]
        redis.set(cancel_key(lost.key), "W222", ex=3600)  # the flag, without its PUBLISH
        lost.store.meta.note_cancel_asked(now_ms() - (CANCEL_RESEND_S + 1) * 1000)
        assert cancel_recorded_ms(lost) is None
        redis.delete(JANITOR_LOCK)
        swept_at = server_ms(redis)
        assert sweep(redis) == []
        wait_for(lambda: cancel_recorded_ms(lost) is not None, timeout=10, what="the re-sent cancel")
        heard = cancel_recorded_ms(lost)
        assert heard is not None and heard - swept_at <= HEARD_WITHIN_MS, (heard, swept_at)
        wait_for(lambda: lost.state() == "cancelled", what="the turn to end cancelled")
        assert all(s.state() == "running" for s in sessions if s is not lost)
    finally:
        release.set()
