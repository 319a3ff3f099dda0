"""Slack's agent session through web, real workers and the fake Slack: `processing` while a turn
runs (Slack's Stop button shows), and out of it when the turn finishes, is stopped with that
button, parks on an approval, or dies with its worker."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.testing import FakeLLM, calls, text
from agent.testing.fake_model import Reply
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.stack import Stack
from jobs.keys import SessionKey
from jobs.session.state import state_of
from jobs.session.store import SessionStore
from tests.polling import wait_for
from tests.sandboxing import host_pids, sleep_marker, workspace_of
from tests.slack_events import agent_session_stopped, mention
from tests.thread_view import thread_texts
from tests.unattended import UNATTENDED

WAIT_FOR_GO = {"command": "while [ ! -f go ]; do sleep 0.1; done", "timeout": 60}


def start(stack: Stack, fake_slack: FakeSlack, words: str) -> SessionKey:
    root = fake_slack.add_user_message("C111", f"<@{BOT_USER_ID}> {words}", user="W222")
    assert stack.send_event(mention(words, ts=root["ts"])).status_code == 200
    return SessionKey(team="T111", channel="C111", thread_ts=root["ts"])


def statuses_become(fake_slack: FakeSlack, key: SessionKey, expected: list[str]) -> None:
    wait_for(
        lambda: fake_slack.session_statuses(key.channel, key.thread_ts) == expected,
        timeout=40,
        what=f"the session's statuses to be {expected}",
    )


def model_by_request(plans: dict[str, list[Reply]]) -> Callable[[dict[str, Any]], Reply]:
    """The model's next reply for the request in the conversation, after as many tool results as
    it has: each thread follows its own plan, whatever the order (or retries) of the requests."""

    def reply(body: dict[str, Any]) -> Reply:
        said = json.dumps(body["messages"])
        plan = next(steps for words, steps in plans.items() if words in said)
        done = sum(message["role"] == "tool" for message in body["messages"])
        return plan[done] if done < len(plan) else text("ok")

    return reply


def state(redis, key: SessionKey) -> str:
    return state_of(SessionStore(redis, key))


def test_the_session_works_while_a_turn_runs_and_leaves_it_however_the_turn_ends(
    tmp_path: Path, redis, redis_url, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    stack = Stack(
        tmp_path,
        redis_url,
        fake_slack.api_url,
        fake_llm.base_url,
        **{**UNATTENDED, "APPROVAL_WAIVED_TOOLS": "shell"},  # http_get asks a person
        LEASE_TTL_SECONDS="3",
        JANITOR_INTERVAL_SECONDS="1",
    ).start(workers=2)
    sleeps = [sleep_marker(), sleep_marker()]
    fake_llm.default = model_by_request(
        {
            "fix the flaky test": [calls(("c1", "shell", WAIT_FOR_GO)), text("the tests pass now")],
            "long build": [calls(("c1", "shell", {"command": f"sleep {sleeps[0]}", "timeout": 300}))],
            "fetch the release notes": [
                calls(("c1", "shell", WAIT_FOR_GO)),
                calls(("c2", "http_get", {"url": "https://x.test/"})),
            ],
            "deploy it": [calls(("c1", "shell", {"command": f"sleep {sleeps[1]}", "timeout": 300}))],
        }
    )
    try:
        # Finished: the turn's command waits for a file the test writes once Slack shows it working.
        finished = start(stack, fake_slack, "fix the flaky test")
        statuses_become(fake_slack, finished, ["processing"])
        assert fake_slack.state.agent_sessions[f"C111:{finished.thread_ts}"]["title"] == "fix the flaky test"
        (workspace_of(tmp_path, finished) / "go").touch()
        wait_for(lambda: "the tests pass now" in thread_texts(fake_slack, "C111", finished.thread_ts))
        statuses_become(fake_slack, finished, ["processing", "active"])

        # Cancelled with Slack's own Stop button, which arrives as agent_session_stopped.
        stopped = start(stack, fake_slack, "long build")
        statuses_become(fake_slack, stopped, ["processing"])
        assert stack.send_event(agent_session_stopped(thread_ts=stopped.thread_ts)).status_code == 200
        statuses_become(fake_slack, stopped, ["processing", "active"])
        wait_for(lambda: state(redis, stopped) == "cancelled" and not host_pids(sleeps[0]), what="the stop")

        # Parked: a call that needs a person's approval.
        parked = start(stack, fake_slack, "fetch the release notes")
        statuses_become(fake_slack, parked, ["processing"])
        (workspace_of(tmp_path, parked) / "go").touch()
        statuses_become(fake_slack, parked, ["processing", "suspended"])
        wait_for(lambda: state(redis, parked) == "awaiting_approval", what="the parked turn")

        # Crashed: the worker running the turn is killed; the janitor ends the turn.
        crashed = start(stack, fake_slack, "deploy it")
        statuses_become(fake_slack, crashed, ["processing"])
        wait_for(lambda: host_pids(sleeps[1]), what="the command to run")
        stack.kill(next(name for name in ("worker0", "worker1") if _runs(stack, name, sleeps[1])))
        statuses_become(fake_slack, crashed, ["processing", "active"])
        wait_for(lambda: state(redis, crashed) == "interrupted", what="the janitor")
    finally:
        for pid in [pid for marker in sleeps for pid in host_pids(marker)]:
            os.kill(pid, signal.SIGKILL)
        stack.stop()


def _runs(stack: Stack, name: str, sleep: str) -> bool:
    from agent.tools.sandbox import descendants

    return bool(set(host_pids(sleep)) & set(descendants(stack.processes[name].pid)))
