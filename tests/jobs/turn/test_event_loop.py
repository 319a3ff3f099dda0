"""The turns of a worker process share one event loop (jobs.turn.event_loop)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from rq.timeouts import JobTimeoutException, TimerDeathPenalty

from agent.offload import INLINE_MAX_MESSAGES, over_messages
from jobs import log_context
from jobs.turn.event_loop import TurnEventLoop
from tests.polling import wait_for


def test_turns_from_several_job_threads_run_at_once_on_one_loop_thread() -> None:
    shared = TurnEventLoop()
    both_in = asyncio.Event()
    arrived: list[str] = []

    async def turn() -> str:
        arrived.append(threading.current_thread().name)
        if len(arrived) == 2:
            both_in.set()
        await asyncio.wait_for(both_in.wait(), 10)  # only returns if the other turn runs meanwhile
        return threading.current_thread().name

    with ThreadPoolExecutor(2) as jobs:
        names = list(jobs.map(lambda _: shared.run(turn()), range(2)))
    assert names == ["turns event loop", "turns event loop"]


def test_a_job_timeout_cancels_the_turn_and_waits_for_it_to_unwind() -> None:
    shared = TurnEventLoop()
    unwound = threading.Event()
    started = threading.Event()

    async def endless_turn() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.sleep(0.05)  # a tool's cleanup, on the loop
            unwound.set()

    with pytest.raises(JobTimeoutException), TimerDeathPenalty(1, JobTimeoutException, job_id="j1"):
        shared.run(endless_turn())
    assert started.is_set()
    assert unwound.is_set(), "the job thread went on before the cancelled turn had unwound"


def test_the_loop_goes_on_with_other_turns_after_one_fails() -> None:
    shared = TurnEventLoop()

    async def failing() -> None:
        raise ValueError("a bug in one turn")

    async def fine() -> str:
        return "answered"

    with pytest.raises(ValueError, match="a bug in one turn"):
        shared.run(failing())
    assert shared.run(fine()) == "answered"


def test_work_over_a_long_history_leaves_the_loop_and_short_work_stays() -> None:
    async def where(count: int) -> str:
        return await over_messages(count, lambda: threading.current_thread().name)

    async def both() -> tuple[str, str, str]:
        here = threading.current_thread().name
        return here, await where(INLINE_MAX_MESSAGES), await where(INLINE_MAX_MESSAGES + 1)

    here, short, long = asyncio.run(both())
    assert short == here
    assert long != here


def test_a_blocked_loop_is_seen() -> None:
    shared = TurnEventLoop()

    async def blocking_step() -> None:
        threading.Event().wait(0.5)  # CPU-bound or blocking work done on the loop, by mistake

    shared.run(blocking_step())
    wait_for(lambda: shared.longest_stall_s >= 0.4, what="the stall watcher to measure the stall")


def test_a_turn_on_the_shared_loop_and_its_threads_log_with_the_job_threads_fields() -> None:
    shared = TurnEventLoop()

    async def turn() -> tuple[dict[str, str], dict[str, str]]:
        on_loop = dict(log_context.current())
        in_a_tool_thread = await asyncio.to_thread(lambda: dict(log_context.current()))
        return on_loop, in_a_tool_thread

    def job(turn_id: str) -> tuple[dict[str, str], dict[str, str]]:
        with log_context.bound(thread="T1:C1:1.0", turn=turn_id):
            return shared.run(turn())

    with ThreadPoolExecutor(2) as jobs:
        seen = list(jobs.map(job, ["turn-a", "turn-b"]))
    for turn_id, (on_loop, in_thread) in zip(["turn-a", "turn-b"], seen, strict=True):
        assert on_loop == in_thread == {"thread": "T1:C1:1.0", "turn": turn_id}
    assert shared.run(turn()) == ({}, {}), "a turn's fields stayed on the loop after it ended"
