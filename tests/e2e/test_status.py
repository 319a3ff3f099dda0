"""`threadline status`, run as an operator runs it, against a stack with real turns: what runs
where, the queues, and one thread's turns and tool calls, read from Redis alone."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from rq import Worker

from agent.testing import calls, text
from gateway.sandbox.stack import THREADLINE, Stack
from jobs.control import cancel
from jobs.queues import SERIALIZER, TURNS_QUEUE
from tests.e2e.sessions import link
from tests.e2e.turns import Session
from tests.polling import wait_for


def status(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [THREADLINE, "status", *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def status_json(stack: Stack, *args: str) -> Any:
    done = status(stack.env, "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_status_shows_the_running_turn_on_its_worker_and_a_finished_threads_tool_calls(
    stack, redis, fake_slack, fake_llm, busy_turns
):
    fake_llm.script(calls(("ls1", "list_dir", {"path": "."})), text("listed"))
    finished = Session(redis, fake_slack, "list the files")
    wait_for(lambda: "listed" in finished.bot_texts(), what="the first session's answer")
    busy = busy_turns.start()
    try:
        workers = Worker.all(connection=redis, serializer=SERIALIZER)
        (turn_worker,) = [w.name for w in workers if TURNS_QUEUE in w.queue_names()]
        found = status_json(stack)
        (running,) = [row for row in found["sessions"] if row["key"] == str(busy.key)]
        assert (running["state"], running["owner"], running["worker"]) == ("running", "W222", turn_worker)
        assert running["usage"]["steps"] == 1 and running["usage"]["input"] > 0  # its one model call
        assert str(finished.key) not in [row["key"] for row in found["sessions"]]  # idle: counted only
        assert found["idle_or_done"] >= 1
        (worker,) = [w for w in found["workers"] if w["name"] == turn_worker]
        assert [job["session"] for job in worker["running"]] == [str(busy.key)]
        turns = {row["name"]: row for row in found["queues"]}[TURNS_QUEUE]
        assert (turns["waiting"], turns["running"]) == (0, 1)

        shown = status(stack.env, "--thread", link(fake_slack, finished.key))
        assert shown.returncode == 0, shown.stderr
        assert "1 tool calls, completed" in shown.stdout
        assert "list_dir ls1: ok" in shown.stdout
        assert "model usage: " in shown.stdout and " tokens (" in shown.stdout  # two model calls
    finally:
        cancel(redis, busy.key, by="W222")
    busy_turns.assert_stopped(busy)


def test_status_refuses_what_is_not_a_thread_link(redis, redis_url):
    done = status({**os.environ, "REDIS_URL": redis_url}, "--thread", "https://example.com/not/a/thread")
    assert done.returncode == 2
    assert "not a Slack thread link" in done.stdout
