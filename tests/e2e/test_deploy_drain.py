"""A deploy interrupts nothing: SIGTERM to a real `threadline worker` mid-turn, a new worker after.

The old worker stops taking jobs and hands its turn back within WORKER_DRAIN_SECONDS: a model
call in flight is asked again by the next worker (nothing ran, so nothing is unknown); a tool
that finishes within the grace keeps its result; one that does not is stopped with a result
that says so. Nobody types `!resume`, and the thread gets neither the "stopped unexpectedly"
notice nor an unknown-result notice. A second SIGTERM is today's crash path, which keeps its
promises. The delivery worker finishes the post in flight and writes its ledger before it
leaves; one still unanswered at the deadline is looked up by the next worker, not posted again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from typing import Any

from agent.testing import FakeLLM, calls, text
from gateway.sandbox.fake_slack import FakeSlack, Fault
from gateway.sandbox.stack import THREADLINE, Stack
from jobs.janitor import INTERRUPTED_TEXT
from jobs.keys import SessionKey
from jobs.session.notices import AnswerNotice, InfoNotice
from tests.e2e.agents import tool_results
from tests.e2e.sessions import open_session, post, redis_of
from tests.e2e.turns import Session
from tests.polling import wait_for
from tests.sandboxing import host_pids, sleep_marker
from tests.thread_view import bot_messages, shown, thread_texts

DRAIN_S = 6  # tools get 4 s of it (gateway.processes.worker.HAND_BACK_S keeps 2)
RESTARTED = "because the worker restarted; it may have partly run"


def deploy(stack: Stack, old: str = "worker0", new: str = "worker1") -> subprocess.Popen[bytes]:
    """SIGTERM the running `threadline worker`, wait for it to exit, and start its successor."""
    process = stack.processes[old]
    os.kill(process.pid, signal.SIGTERM)
    process.wait(timeout=DRAIN_S + 10)  # a deadline for the test, not a timing assertion
    return stack.spawn(new, [THREADLINE, "worker"])


def answered(session: Session, words: str) -> None:
    wait_for(lambda: any(words in said for said in session.bot_texts()), what=f"{words!r} in the thread")


def nothing_unknown(session: Session) -> bool:
    told = thread_texts(session.slack, session.key.channel, session.key.thread_ts)
    return not session.notices("unknown_result") and not [t for t in told if INTERRUPTED_TEXT in t]


def test_a_deploy_while_the_model_answers_hands_the_turn_to_the_next_worker(
    make_stack, fake_slack, fake_llm, redis
):
    asked: list[dict[str, Any]] = []
    first_held = threading.Event()

    def model(body: dict[str, Any]) -> Any:
        asked.append(body)
        if len(asked) == 1:
            first_held.wait(60)  # the old worker's request: never answered before the deploy
        return text("all built")

    fake_llm.default = model
    stack = make_stack(WORKER_DRAIN_SECONDS=str(DRAIN_S))
    try:
        session = Session(redis, fake_slack, "build it")
        wait_for(lambda: asked, what="the model to be asked")
        deploy(stack)
        answered(session, "all built")
    finally:
        first_held.set()
    assert len(asked) == 2 and asked[1]["messages"] == asked[0]["messages"]  # asked again, the same
    assert session.bot_texts().count("all built") == 1
    assert nothing_unknown(session) and session.state() == "idle"


def shell_turn(fake_llm: FakeLLM, command: str) -> None:
    fake_llm.script(calls(("c1", "shell", {"command": command, "timeout": 300})), text("next step done"))


def test_a_tool_that_finishes_within_the_grace_keeps_its_result(make_stack, fake_slack, fake_llm, redis):
    marker = sleep_marker()
    shell_turn(fake_llm, f"sleep {marker} & wait; echo built")
    # However many times the next step is asked (the old worker's call dropped by the drain, a
    # retry of it on a loaded machine), it gets the same answer.
    fake_llm.default = lambda body: text("next step done")
    stack = make_stack(WORKER_DRAIN_SECONDS=str(DRAIN_S))
    session = Session(redis, fake_slack, "build it")
    wait_for(lambda: host_pids(marker), what="the command to run")
    old = stack.processes["worker0"]
    os.kill(old.pid, signal.SIGTERM)
    for pid in host_pids(marker):  # the command ends inside the grace
        os.kill(pid, signal.SIGTERM)
    old.wait(timeout=DRAIN_S + 10)
    stack.spawn("worker1", [THREADLINE, "worker"])
    answered(session, "next step done")
    result = tool_results(fake_llm.accepted()[1])["c1"]
    assert "built" in result and RESTARTED not in result
    assert nothing_unknown(session)


def test_a_tool_still_running_at_the_deadline_is_stopped_and_says_so(make_stack, fake_slack, fake_llm, redis):
    marker = sleep_marker()
    shell_turn(fake_llm, f"sleep {marker}")
    stack = make_stack(WORKER_DRAIN_SECONDS=str(DRAIN_S))
    session = Session(redis, fake_slack, "build it")
    wait_for(lambda: host_pids(marker), what="the command to run")
    deploy(stack)
    assert not host_pids(marker)
    answered(session, "next step done")
    assert RESTARTED in tool_results(fake_llm.accepted()[1])["c1"]
    assert nothing_unknown(session) and len(fake_llm.accepted()) == 2


def test_a_second_sigterm_falls_back_to_the_crash_path(make_stack, fake_slack, fake_llm, redis):
    marker = sleep_marker()
    shell_turn(fake_llm, f"sleep {marker}")
    stack = make_stack(WORKER_DRAIN_SECONDS="60", LEASE_TTL_SECONDS="3", JANITOR_INTERVAL_SECONDS="1")
    session = Session(redis, fake_slack, "build it")
    wait_for(lambda: host_pids(marker), what="the command to run")
    old = stack.processes["worker0"]
    os.kill(old.pid, signal.SIGTERM)
    wait_for(lambda: "stopping (SIGTERM)" in stack.log("worker0"), what="the drain to begin")
    os.kill(old.pid, signal.SIGTERM)
    old.wait(timeout=30)  # well before the 60 s drain
    stack.spawn("worker1", [THREADLINE, "worker"])
    wait_for(lambda: session.state() == "interrupted", what="the janitor to mark the turn interrupted")
    wait_for(lambda: session.notices("unknown_result"), what="the unknown-result notice")
    assert [(n.tool_call_id, n.tool_name) for n in session.notices("unknown_result")] == [("c1", "shell")]


# -- the delivery worker --------------------------------------------------------------------


def delivered(fake_slack: FakeSlack, key: SessionKey) -> list[str]:
    """The bot's messages in the thread (a turn that only answers has no progress card)."""
    return [shown(m) for m in bot_messages(fake_slack, key.channel, key.thread_ts)]


def post_in_flight(
    stack: Stack, fake_slack: FakeSlack, key: SessionKey, slack_answers_after_s: float
) -> None:
    """An answer whose chat.postMessage Slack has done but not yet answered, as the deploy begins."""
    fake_slack.inject(Fault("chat.postMessage", delay_s=slack_answers_after_s, after_work=True))
    post(redis_of(stack), key, AnswerNotice(turn_id="t2", text="the second answer"))
    wait_for(lambda: "the second answer" in delivered(fake_slack, key), what="the post to reach Slack")


def test_a_deploy_lets_a_post_in_flight_complete_and_posts_nothing_twice(
    make_stack, fake_slack, fake_llm, redis
):
    stack = make_stack(WORKER_DRAIN_SECONDS=str(DRAIN_S))
    key = open_session(stack, fake_slack, fake_llm)
    wait_for(lambda: "started" in delivered(fake_slack, key), what="the first answer")
    post_in_flight(stack, fake_slack, key, slack_answers_after_s=DRAIN_S / 2)
    deploy(stack)
    # The old worker read Slack's answer and wrote its ledger before it left: nothing to look up.
    post(redis, key, InfoNotice(text="after the deploy"))
    wait_for(lambda: "after the deploy" in delivered(fake_slack, key), what="the next worker's post")
    assert delivered(fake_slack, key) == ["started", "the second answer", "after the deploy"]
    assert not fake_slack.calls("conversations.replies")


def test_a_post_still_unanswered_at_the_drain_deadline_is_checked_not_posted_again(
    make_stack, fake_slack, fake_llm, redis
):
    stack = make_stack(WORKER_DRAIN_SECONDS=str(DRAIN_S))
    key = open_session(stack, fake_slack, fake_llm)
    wait_for(lambda: "started" in delivered(fake_slack, key), what="the first answer")
    post_in_flight(stack, fake_slack, key, slack_answers_after_s=60)
    deploy(stack)  # the supervisor kills the delivery worker at the deadline: today's crash path
    post(redis, key, InfoNotice(text="after the deploy"))
    wait_for(lambda: "after the deploy" in delivered(fake_slack, key), timeout=40, what="the next post")
    assert delivered(fake_slack, key) == ["started", "the second answer", "after the deploy"]
    assert fake_slack.calls("conversations.replies")  # it looked before posting again
