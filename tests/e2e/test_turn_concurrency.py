"""One `threadline worker` runs several turns at once (TURN_CONCURRENCY), and each keeps the
promises a turn with a process of its own keeps: RQ sees each as a started job with its own
execution, a Stop stops only its turn, a killed worker leaves each turn interrupted with its
own unknown-result notice, and a deploy hands each back."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

from rq import Worker
from rq.job import Job
from rq.registry import StartedJobRegistry

from agent.testing import calls, text
from gateway.sandbox.stack import THREADLINE
from jobs.control import cancel
from jobs.janitor import sweep
from jobs.queues import SERIALIZER, TURNS_QUEUE
from tests.e2e.agents import tool_results
from tests.e2e.sessions import BusyTurns
from tests.e2e.turns import Session
from tests.polling import wait_for
from tests.sandboxing import host_pids, sleep_marker

AT_ONCE = 4


def test_one_worker_process_runs_turns_at_once_each_a_started_rq_job(make_stack, fake_slack, fake_llm, redis):
    asked: list[dict[str, Any]] = []
    checked = threading.Event()

    def model(body: dict[str, Any]) -> Any:
        asked.append(body)
        checked.wait(60)  # no turn answers before the test has seen all of them running at once
        return text("done")

    fake_llm.default = model
    make_stack(TURN_CONCURRENCY=str(AT_ONCE))
    try:
        sessions = [Session(redis, fake_slack, f"job {index}") for index in range(AT_ONCE)]
        wait_for(lambda: len(asked) >= AT_ONCE, what="every turn's model request, from one worker")
        turn_workers = [
            w for w in Worker.all(connection=redis, serializer=SERIALIZER) if TURNS_QUEUE in w.queue_names()
        ]
        assert len(turn_workers) == 1
        assert len(turn_workers[0].get_current_executions(refresh=True)) == AT_ONCE
        assert StartedJobRegistry(TURNS_QUEUE, connection=redis).count == AT_ONCE
    finally:
        checked.set()
    for session in sessions:
        wait_for(lambda session=session: "done" in session.bot_texts(), what="each answer")
    wait_for(
        lambda: StartedJobRegistry(TURNS_QUEUE, connection=redis).count == 0, what="RQ to finish each job"
    )


def test_a_long_turn_stays_a_started_job_its_execution_outliving_the_job(
    make_stack, fake_slack, fake_llm, redis
):
    """RQ drops an execution whose heartbeat TTL lapses. The worker is a SimpleWorker, whose
    execution TTL is the job's timeout + 60 s (rq `SimpleWorker.get_heartbeat_ttl`), so a turn
    is a started job until its job ends, with no heartbeat of ours (M7 went)."""
    make_stack(TURN_CONCURRENCY="2")
    turns = BusyTurns(redis, fake_slack, fake_llm)
    try:
        turns.start()
        worker = next(
            w for w in Worker.all(connection=redis, serializer=SERIALIZER) if TURNS_QUEUE in w.queue_names()
        )
        [execution] = worker.get_current_executions(refresh=True)
        job = Job.fetch(execution.job_id, connection=redis, serializer=SERIALIZER)
        assert job.timeout is not None and redis.ttl(execution.key) > job.timeout
        assert StartedJobRegistry(TURNS_QUEUE, connection=redis).count == 1
    finally:
        turns.close()


def test_a_stop_stops_only_its_own_turn(make_stack, fake_slack, fake_llm, redis):
    make_stack(TURN_CONCURRENCY="2")
    turns = BusyTurns(redis, fake_slack, fake_llm)
    try:
        stopped, running = turns.start(), turns.start(channel="C222")
        cancel(redis, stopped.key, by="W222")
        turns.assert_stopped(stopped)
        turns.assert_still_running(running)
    finally:
        turns.close()


def test_a_killed_worker_leaves_each_of_its_turns_interrupted_with_its_own_notice(
    make_stack, fake_slack, fake_llm, redis
):
    stack = make_stack(TURN_CONCURRENCY="2", LEASE_TTL_SECONDS="3", JANITOR_INTERVAL_SECONDS="1")
    turns = BusyTurns(redis, fake_slack, fake_llm)
    try:
        both = [turns.start(), turns.start(channel="C222")]
        stack.kill("worker0")
        sessions = [Session.of(redis, fake_slack, turn.key) for turn in both]
        wait_for(
            lambda: sweep(redis) or all(s.state() == "interrupted" for s in sessions), what="the janitor"
        )
        for session in sessions:
            assert [(n.tool_call_id, n.tool_name) for n in session.notices("unknown_result")] == [
                ("c1", "shell")
            ]
    finally:
        turns.close()


def test_a_deploy_hands_back_every_turn_of_the_worker(make_stack, fake_slack, fake_llm, redis):
    markers = [sleep_marker(), sleep_marker()]
    for marker in markers:
        fake_llm.script(calls(("c1", "shell", {"command": f"sleep {marker}", "timeout": 300})))
    fake_llm.default = lambda body: text("next step done")
    stack = make_stack(TURN_CONCURRENCY="2", WORKER_DRAIN_SECONDS="4")
    sessions = [Session(redis, fake_slack, "build one"), Session(redis, fake_slack, "build two")]
    wait_for(lambda: all(host_pids(marker) for marker in markers), what="both commands to run")
    old = stack.processes["worker0"]
    os.kill(old.pid, signal.SIGTERM)
    old.wait(timeout=20)
    stack.spawn("worker1", [THREADLINE, "worker"])
    for session in sessions:
        wait_for(lambda session=session: "next step done" in session.bot_texts(), what="each answer")
        assert not session.notices("unknown_result")
    continued = [r for r in fake_llm.accepted() if "c1" in tool_results(r)]
    assert len(continued) == 2 and all("worker restarted" in tool_results(r)["c1"] for r in continued)
