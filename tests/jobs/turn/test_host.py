"""The turn host: one event loop for every turn of a worker process, lanes, drain (jobs.turn.host)."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from agent.offload import INLINE_MAX_MESSAGES, in_thread, over_messages
from jobs import log_context
from jobs.turn.host import TurnHost
from tests.polling import wait_for


def test_turns_from_many_jobs_run_at_once_on_the_one_loop_thread() -> None:
    turns = TurnHost()
    all_in = asyncio.Event()
    arrived: list[str] = []

    async def turn() -> str:
        arrived.append(threading.current_thread().name)
        if len(arrived) == 8:
            all_in.set()
        await asyncio.wait_for(all_in.wait(), 10)  # only returns if the others run meanwhile
        return threading.current_thread().name

    with ThreadPoolExecutor(8) as jobs:  # handed over from several threads, as RQ's loop and lanes do
        names = list(jobs.map(lambda _: turns.submit(turn()).result(timeout=20), range(8)))
    assert names == ["turns-loop"] * 8


def test_a_job_timeout_cancels_the_turn_and_it_unwinds_before_the_job_ends() -> None:
    turns = TurnHost()
    started, unwound = threading.Event(), threading.Event()

    async def endless_turn() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.sleep(0.05)  # a tool's cleanup, on the loop
            unwound.set()

    async def job() -> None:  # as the adapter awaits a coroutine job (concurrent_worker._awaited)
        async with asyncio.timeout(0.5):
            await endless_turn()

    with pytest.raises(TimeoutError):
        turns.submit(job()).result(timeout=20)
    assert started.is_set()
    assert unwound.is_set(), "the job ended before the cancelled turn had unwound"


def test_the_loop_goes_on_with_other_turns_after_one_fails() -> None:
    turns = TurnHost()

    async def failing() -> None:
        raise ValueError("a bug in one turn")

    async def fine() -> str:
        return "answered"

    with pytest.raises(ValueError, match="a bug in one turn"):
        turns.submit(failing()).result(timeout=20)
    assert turns.submit(fine()).result(timeout=20) == "answered"


def test_work_over_a_long_history_leaves_the_loop_and_short_work_stays() -> None:
    async def where(count: int) -> str:
        return await over_messages(count, lambda: threading.current_thread().name)

    async def both() -> tuple[str, str, str]:
        here = threading.current_thread().name
        return here, await where(INLINE_MAX_MESSAGES), await where(INLINE_MAX_MESSAGES + 1)

    here, short, long = TurnHost().submit(both()).result(timeout=20)
    assert short == here == "turns-loop"
    assert long != here


def test_the_stall_probe_sees_a_blocked_loop_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    turns = TurnHost(stall_warn_ms=100)

    async def blocking_step() -> None:
        threading.Event().wait(0.5)  # blocking work done on the loop, by mistake

    with caplog.at_level(logging.WARNING, logger="jobs.turn.host"):
        turns.submit(blocking_step()).result(timeout=20)
        wait_for(lambda: turns.longest_stall_s >= 0.4, what="the probe to measure the stall")
        wait_for(
            lambda: any("stalled for" in line.getMessage() for line in caplog.records), what="the warning"
        )


def test_the_stop_line_tells_the_loop_s_own_work_from_its_waits(caplog: pytest.LogCaptureFixture) -> None:
    """A stall with the loop's thread computing is the loop's own work; one with it asleep is a
    block. The stop line gives the CPU time the loop's thread ran beside its longest stall."""
    turns = TurnHost()

    async def waiting_step() -> None:
        threading.Event().wait(0.4)  # blocks the loop, computing nothing

    async def computing_step() -> None:
        began = time.thread_time()
        while time.thread_time() - began < 0.4:
            pass

    turns.submit(waiting_step()).result(timeout=20)
    wait_for(lambda: turns.longest_stall_s >= 0.3, what="the probe to measure the wait")
    assert turns.loop_cpu_s < 0.3
    turns.submit(computing_step()).result(timeout=20)
    wait_for(lambda: turns.loop_cpu_s >= 0.4, what="the probe to see the loop's CPU time")
    with caplog.at_level(logging.INFO, logger="jobs.turn.host"):
        turns.log_longest_stall()
    ran = re.search(r"stalled at most [0-9.]+ s; its thread ran ([0-9.]+) CPU-s", caplog.text)
    assert ran is not None and float(ran.group(1)) >= 0.4


def blocked_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "blocked in the kernel" in r.getMessage()]


def test_the_watch_names_the_call_that_blocks_the_loop(caplog: pytest.LogCaptureFixture) -> None:
    turns = TurnHost()
    reader, writer = os.pipe()

    async def reading_a_pipe_on_the_loop() -> bytes:
        return os.read(reader, 1)  # blocks the loop until the test writes

    with caplog.at_level(logging.WARNING, logger="jobs.turn.host"):
        read = turns.submit(reading_a_pipe_on_the_loop())
        told = wait_for(
            lambda: next(
                (r.getMessage() for r in caplog.records if "blocked in the kernel" in r.getMessage()), ""
            ),
            what="the watch's warning",
        )
        os.write(writer, b"x")
        assert read.result(timeout=20) == b"x"
    assert "pipe" in told and "reading_a_pipe_on_the_loop" in told  # the kernel wait, and the code


def test_a_loop_that_only_waits_for_events_is_never_called_blocked(caplog: pytest.LogCaptureFixture) -> None:
    turns = TurnHost()

    async def idle() -> None:
        await asyncio.sleep(1.0)

    with caplog.at_level(logging.WARNING, logger="jobs.turn.host"):
        turns.submit(idle()).result(timeout=20)
    assert blocked_lines(caplog) == []


def test_the_lanes_are_named_threads_off_the_loop() -> None:
    turns = TurnHost()

    async def names() -> tuple[str, str, str]:
        def name() -> str:
            return threading.current_thread().name

        return await turns.rq(name), await turns.blocking(name), await turns.in_jobs(name)

    rq, state, jobs = turns.submit(names()).result(timeout=20)
    assert rq.startswith("turns-rq") and state.startswith("turns-state") and jobs.startswith("turns-jobs")


def test_the_log_context_follows_the_job_into_the_loop_and_the_lanes() -> None:
    turns = TurnHost()

    async def turn() -> list[dict[str, str]]:
        def here() -> dict[str, str]:
            return dict(log_context.current())

        return [here(), await turns.blocking(here), await turns.rq(here), await in_thread(here)]

    def job(turn_id: str) -> list[dict[str, str]]:
        with log_context.bound(thread="T1:C1:1.0", turn=turn_id):
            return turns.submit(turn()).result(timeout=20)

    with ThreadPoolExecutor(2) as jobs:
        seen = list(jobs.map(job, ["turn-a", "turn-b"]))
    for turn_id, places in zip(["turn-a", "turn-b"], seen, strict=True):
        assert places == [{"thread": "T1:C1:1.0", "turn": turn_id}] * 4
    assert turns.submit(turn()).result(timeout=20) == [{}] * 4, "a job's fields stayed behind"


class Heard:
    def __init__(self) -> None:
        self.drained: list[float] = []

    def drain(self, grace_s: float) -> None:
        self.drained.append(grace_s)


def test_a_drain_reaches_every_running_turn_and_a_turn_starting_afterwards_at_once() -> None:
    turns = TurnHost()
    first, late = Heard(), Heard()
    release = threading.Event()

    async def running(key: str, turn: Heard) -> None:
        with turns.running_turn(key, turn):
            while not release.is_set():
                await asyncio.sleep(0.01)

    one = turns.submit(running("T1:C1:1.0", first))
    wait_for(lambda: turns.turns() == ["T1:C1:1.0"], what="the turn to register")
    assert turns.running("T1:C1:1.0") is first and turns.running("T1:C1:2.0") is None
    turns.drain(5.0)
    wait_for(lambda: first.drained == [5.0], what="the running turn to hear the drain")

    async def starts_late() -> list[float]:
        with turns.running_turn("T1:C1:2.0", late):
            return list(late.drained)

    heard_at_start = turns.submit(starts_late()).result(timeout=20)
    assert len(heard_at_start) == 1 and 0 < heard_at_start[0] <= 5.0
    release.set()
    one.result(timeout=20)
    assert turns.turns() == []
