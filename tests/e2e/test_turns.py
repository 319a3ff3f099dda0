"""Turns on real RQ worker processes: tool steps, steering, one turn at a time, cancel, crash, resume."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from agent.compaction.prompt import COMPACTION_INSTRUCTION
from agent.fold import INTERRUPTED_TOOL_RESULT
from agent.testing import FakeLLM, Reply, calls, text
from gateway.sandbox.stack import THREADLINE, Stack
from jobs.control import cancel, request_compaction, resume
from jobs.input import TurnClaimed, claim_input
from jobs.janitor import sweep
from jobs.keys import SessionKey
from jobs.queues import clear_turn_flag
from jobs.session.state import PARKED_STATES
from jobs.session.user_input import UserInput
from tests.e2e.agents import content_text
from tests.e2e.turns import CHANNEL, TEAM, Session
from tests.polling import wait_for
from tests.rq_state import take_a_turn_job, waiting
from tests.sandboxing import host_pids, sleep_marker, workspace_of
from tests.thread_view import thread_texts
from tests.unattended import UNATTENDED


def tool_results(request: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def test_a_turn_with_three_tool_steps(stack: Stack, redis, fake_slack, fake_llm: FakeLLM):
    fake_llm.script(
        calls(("c1", "write_file", {"path": "notes.txt", "content": "one"})),
        calls(("c2", "read_file", {"path": "notes.txt"})),
        calls(("c3", "list_dir", {"path": "."})),
        text("All three done."),
    )
    session = Session(redis, fake_slack, "take notes")
    wait_for(lambda: "All three done." in session.bot_texts(), what="the answer")
    assert len(fake_llm.accepted()) == 4 and fake_llm.rejected == []
    assert "one" in tool_results(fake_llm.accepted()[2])["c2"]
    assert session.state() == "idle"
    cards = session.notices("progress")
    assert [line.state for line in cards[-1].card.tools] == ["done", "done", "done"]
    assert cards[-1].card.state == "done"


def card_copies(redis, key) -> int:
    """How many progress-card JSON documents the session's keys hold (each has one "steps")."""
    held = 0
    for name in redis.scan_iter(match=key.redis_key("*")):
        kind = redis.type(name)
        if kind == b"stream":
            values = [v for _, fields in redis.xrange(name) for v in fields.values()]
        elif kind == b"hash":
            values = list(redis.hgetall(name).values())
        elif kind == b"string":
            values = [redis.get(name)]
        else:
            continue
        # A key can go between SCAN and its read (a flag taken meanwhile): it holds no card.
        held += sum(value.count(b'"steps":') for value in values if value is not None)
    return held


def test_a_turn_of_many_tool_steps_keeps_one_progress_entry(
    stack: Stack, redis, fake_slack, fake_llm: FakeLLM
):
    steps = 30
    fake_llm.script(
        *(calls((f"c{i}", "glob", {"pattern": f"step{i}-*"})) for i in range(steps)), text("Walked.")
    )
    session = Session(redis, fake_slack, "walk")
    # 31 model calls and 30 tool batches: on a loaded 2-core CI machine that can take a minute.
    wait_for(lambda: "Walked." in session.bot_texts(), timeout=90, what="the answer")
    thread = lambda: thread_texts(fake_slack, CHANNEL, session.key.thread_ts)  # noqa: E731
    wait_for(lambda: "Done" in thread()[0], what="the final card")
    outbox = [fields[b"n"] for _, fields in redis.xrange(session.store.outbox_key)]
    assert sum(b'"kind":"progress"' in entry for entry in outbox) == 1
    assert card_copies(redis, session.key) <= 2  # the newest card of the turn (and the nesting copy)
    cards = [shown for shown in thread() if "step" in shown]
    assert len(cards) == 1 and "Done" in cards[0]
    assert all(f"step{i}-*" in cards[0] for i in range(steps))


def test_a_steer_lands_after_the_running_tool_results(
    stack: Stack, redis, fake_slack, fake_llm: FakeLLM, tmp_path
):
    fake_llm.script(calls(("c1", "shell", {"command": "touch started; sleep 1; echo finished"})), text("ok"))
    session = Session(redis, fake_slack, "run the slow thing")
    wait_for((workspace_of(tmp_path, session.key) / "started").exists, what="the tool to start")
    assert session.say("also check the logs") == "inbox"
    wait_for(lambda: len(fake_llm.accepted()) == 2, what="the next model request")
    messages = fake_llm.accepted()[1]["messages"]
    assert [m["role"] for m in messages[-3:]] == ["assistant", "tool", "user"]
    assert "finished" in messages[-2]["content"]
    assert messages[-1]["content"].endswith("also check the logs")
    wait_for(lambda: session.state() == "idle", what="the turn to end")
    assert [r["type"] for r in session.wire()].count("turn.steer") == 1


def test_two_inputs_together_run_one_turn_at_a_time(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    stack = Stack(tmp_path, redis_url, fake_slack.api_url, fake_llm.base_url, **UNATTENDED).start(workers=2)
    try:
        gate = threading.Event()
        in_flight = []

        def reply(body: dict) -> Reply:
            in_flight.append(1)
            return Reply(text="answer", gate=gate)

        fake_llm.default = reply
        session = Session(redis, fake_slack, "first")
        session.say("second")
        wait_for(lambda: len(in_flight) >= 1, what="a model request")
        assert len(in_flight) == 1  # the second job found the session leased
        gate.set()
        wait_for(lambda: session.state() == "idle" and not session.store.redis.llen(session.store.inbox_key),
                 what="all input answered")  # fmt: skip
        user_texts = [m.text() for m in session.history() if m.role == "user"]
        assert [t.split(": ", 1)[1] for t in user_texts] == ["first", "second"]
    finally:
        stack.stop()


def test_cancel_during_a_long_shell_kills_it_and_stops_the_turn(
    stack: Stack, redis, fake_slack, fake_llm, tmp_path
):
    sleep = sleep_marker()
    fake_llm.script(calls(("c1", "shell", {"command": f"sleep {sleep}", "timeout": 120})))
    session = Session(redis, fake_slack, "long build")
    wait_for(lambda: host_pids(sleep), what="the shell to start")
    result = cancel(redis, session.key, by="W222")
    assert result.ok
    wait_for(lambda: session.state() == "cancelled", what="the turn to stop")
    wait_for(lambda: not host_pids(sleep), timeout=15, what="the shell process to be gone")
    assert len(fake_llm.requests) == 1
    wait_for(lambda: any(t.startswith("Stopped by <@W222>") for t in session.bot_texts()), what="the notice")
    results = [r for r in session.wire() if r.get("event", {}).get("type") == "tool.result"]
    assert "The user manually interrupted" in results[0]["event"]["result"]["output"]


def test_worker_killed_during_a_tool_then_resumed(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    sleep = sleep_marker()
    command = f"echo ran >> ran; sleep {sleep}"
    stack = Stack(
        tmp_path,
        redis_url,
        fake_slack.api_url,
        fake_llm.base_url,
        **UNATTENDED,
        LEASE_TTL_SECONDS="3",
        JANITOR_INTERVAL_SECONDS="1",
    ).start()
    try:
        fake_llm.script(calls(("c1", "shell", {"command": command, "timeout": 120})))
        session = Session(redis, fake_slack, "deploy it")
        marker = workspace_of(tmp_path, session.key) / "ran"
        wait_for(marker.exists, what="the command to start")
        stack.kill("worker0")
        wait_for(lambda: sweep(redis) or session.state() == "interrupted", timeout=40, what="the janitor")
        unknown = session.notices("unknown_result")
        assert [(n.tool_call_id, n.tool_name) for n in unknown] == [("c1", "shell")]
        assert unknown[0].summary.startswith("command: echo ran >>")

        stack.spawn("worker1", [THREADLINE, "worker"])
        fake_llm.script(text("I could not confirm the deploy; it may or may not have run."))
        assert resume(redis, session.key, by="W222", turn_timeout_s=600).ok
        wait_for(lambda: session.state() == "idle", what="the resumed turn")
        sent = fake_llm.accepted()[-1]
        assert INTERRUPTED_TOOL_RESULT in tool_results(sent)["c1"]
        assert len(marker.read_text().split()) == 1  # the command ran once
        assert len(session.notices("unknown_result")) == 1
    finally:
        for pid in host_pids(sleep):
            os.kill(pid, signal.SIGKILL)
        stack.stop()


def test_a_turn_that_hits_its_time_limit_says_so(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    stack = Stack(
        tmp_path,
        redis_url,
        fake_slack.api_url,
        fake_llm.base_url,
        **UNATTENDED,
        TURN_TIMEOUT_SECONDS="2",
    ).start()
    try:
        fake_llm.script(calls(("c1", "shell", {"command": "sleep 30", "timeout": 60})))
        session = Session(redis, fake_slack, "slow")
        wait_for(
            lambda: any("time limit" in t for t in session.bot_texts()),
            timeout=20,
            what="the time-limit notice",
        )
        assert session.state() == "failed"
        assert len(fake_llm.requests) == 1
    finally:
        stack.stop()


def test_the_retired_forking_worker_class_is_accepted_and_runs_the_one_worker(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    """`THREADLINE_WORKER_CLASS=fork` is documented contract: a deployment that sets it still
    starts, says once that the class is retired and what runs instead, and answers."""
    stack = Stack(
        tmp_path,
        redis_url,
        fake_slack.api_url,
        fake_llm.base_url,
        **UNATTENDED,
        THREADLINE_WORKER_CLASS="fork",
    ).start()
    try:
        fake_llm.script(text("listed"))
        session = Session(redis, fake_slack, "list")
        wait_for(lambda: "listed" in session.bot_texts(), what="the answer")
        assert stack.log("worker0").count("--worker-class fork is retired") == 1
    finally:
        stack.stop()


def test_input_that_arrives_while_a_job_holds_the_session_is_answered_when_it_ends(
    make_stack, redis, fake_slack, fake_llm: FakeLLM
):
    """A manual compaction holds the session like a turn, so a reply meanwhile waits in the
    inbox. When the job gives the session back, that reply starts the next turn at once, not
    when the job's lease runs out (two minutes here)."""
    make_stack(LEASE_TTL_SECONDS="120")
    summary_gate = threading.Event()

    def model(body: dict) -> Reply:
        last = content_text(body["messages"][-1])
        if COMPACTION_INSTRUCTION[:60] in last:
            return Reply(text="SUMMARY: one question was answered.", gate=summary_gate)
        return text(f"answer to {last.rsplit('ASK-', 1)[-1]}")

    fake_llm.default = model
    session = Session(redis, fake_slack, "ASK-one")
    wait_for(lambda: "answer to one" in session.bot_texts(), what="the first answer")
    assert request_compaction(redis, session.key, by="W222", turn_timeout_s=600).ok
    wait_for(lambda: len(fake_llm.requests) == 2, what="the summary request")
    assert session.say("ASK-two") == "inbox"
    summary_gate.set()
    wait_for(lambda: "answer to two" in session.bot_texts(), timeout=30, what="the waiting reply answered")
    assert session.bot_texts().count("answer to two") == 1
    assert session.store.redis.llen(session.store.inbox_key) == 0


@pytest.mark.parametrize("died", ["after dequeue", "after clearing the queued flag"])
def test_a_turn_whose_worker_died_before_taking_the_lease_is_run_again(
    died: str, make_stack, redis, fake_slack, fake_llm: FakeLLM
):
    """RQ's dequeue pops the job; a worker killed right then (or just after the job cleared its
    `queued` flag) leaves a `queued` session whose job nobody runs. It runs again within the
    crash bound (a lease TTL plus a sweep), not after the flag's six hours."""
    stack = make_stack(workers=0, LEASE_TTL_SECONDS="3", JANITOR_INTERVAL_SECONDS="1")
    fake_llm.script(text("answered after all"))
    session = Session(redis, fake_slack, "are you there?")
    assert take_a_turn_job(redis) is not None  # what the dying worker took with it
    if died == "after clearing the queued flag":
        clear_turn_flag(redis, session.key)
    stack.spawn("worker0", [THREADLINE, "worker"])
    wait_for(lambda: "answered after all" in session.bot_texts(), timeout=60, what="the lost turn to run")
    assert session.bot_texts().count("answered after all") == 1
    assert len(fake_llm.accepted()) == 1


def test_a_turn_claimed_by_a_web_process_that_died_before_enqueueing_it_runs_once(
    make_stack, redis, fake_slack, fake_llm: FakeLLM
):
    """A mention that starts a turn is two steps: jobs/input.lua claims the turn (the `queued`
    flag, state `queued`), then RQ enqueues its job. A web process killed in between leaves the
    flag and no job; the janitor queues the turn once the claim is a lease TTL old, and it runs
    once."""
    stack = make_stack(workers=0, LEASE_TTL_SECONDS="3", JANITOR_INTERVAL_SECONDS="1")
    fake_llm.script(text("answered after all"))
    root = fake_slack.add_user_message(CHANNEL, "are you there?", user="W222")
    key = SessionKey(team=TEAM, channel=CHANNEL, thread_ts=root["ts"])
    said = UserInput(text="are you there?", user="W222", ts=root["ts"])
    assert isinstance(claim_input(redis, key, said, parked=PARKED_STATES), TurnClaimed)  # and no enqueue
    assert waiting(redis) == 0
    session = Session.of(redis, fake_slack, key)

    stack.spawn("worker0", [THREADLINE, "worker"])
    wait_for(lambda: "answered after all" in session.bot_texts(), timeout=60, what="the lost turn to run")
    wait_for(lambda: session.state() == "idle", what="the turn to end")
    assert session.bot_texts().count("answered after all") == 1
    assert len(fake_llm.accepted()) == 1 and waiting(redis) == 0
