"""Redis restarts (with AOF) during a turn: nothing acknowledged is lost, nobody needs a restart."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis import Redis

from agent.testing import FakeLLM, Reply, calls, text
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import THREADLINE, Stack
from tests.durable_redis import DurableRedis
from tests.e2e.test_live_turns import card_with, click, start, state
from tests.e2e.turns import Session
from tests.polling import wait_for
from tests.sandboxing import host_pids, open_for_the_sandbox, sleep_marker, workspace_of
from tests.slack_events import mention
from tests.thread_view import thread_texts
from tests.unattended import UNATTENDED


@pytest.fixture
def durable_redis(tmp_path: Path) -> Iterator[DurableRedis]:
    server = DurableRedis(tmp_path).start()
    yield server
    server.stop()


def answered(slack: FakeSlack, ts: str) -> list[str]:
    return [m.get("text", "") for m in slack.thread("C111", ts) if m.get("bot_id")]


def test_a_restart_during_a_turn_loses_nothing_acknowledged(
    tmp_path: Path, durable_redis: DurableRedis, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    stack = Stack(tmp_path, durable_redis.url, fake_slack.api_url, fake_llm.base_url).start()
    try:
        gate = threading.Event()
        fake_llm.script(Reply(text="answer to the first", gate=gate))
        first = fake_slack.add_user_message("C111", "<@UBOT0001> first", user="W222")
        assert stack.send_event(mention("first", ts=first["ts"])).status_code == 200  # acknowledged
        wait_for(lambda: len(fake_llm.requests) == 1, what="the turn to reach the model")

        durable_redis.restart()
        gate.set()

        wait_for(
            lambda: answered(fake_slack, first["ts"]), timeout=60, what="the first answer after the restart"
        )
        assert answered(fake_slack, first["ts"]) == ["answer to the first"]

        fake_llm.script(text("answer to the second"))
        second = fake_slack.add_user_message("C111", "<@UBOT0001> second", user="W222")
        response = wait_for(
            lambda: (r := stack.send_event(mention("second", ts=second["ts"]))).status_code == 200 and r,
            timeout=30, what="the web process to accept events again",
        )  # fmt: skip
        assert response.status_code == 200
        wait_for(lambda: answered(fake_slack, second["ts"]), timeout=60, what="the second answer")
        assert stack.processes["web"].poll() is None and stack.processes["worker0"].poll() is None
    finally:
        stack.stop()


def test_an_acknowledged_mention_survives_a_restart_before_any_worker_runs(
    tmp_path: Path, durable_redis: DurableRedis, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    stack = Stack(tmp_path, durable_redis.url, fake_slack.api_url, fake_llm.base_url).start(workers=0)
    try:
        root = fake_slack.add_user_message("C111", "<@UBOT0001> hello", user="W222")
        assert stack.send_event(mention("hello", ts=root["ts"])).status_code == 200
        durable_redis.restart()
        fake_llm.script(text("still here"))
        stack.spawn("worker0", [THREADLINE, "worker"])
        wait_for(lambda: answered(fake_slack, root["ts"]), timeout=60, what="the answer")
        assert answered(fake_slack, root["ts"]) == ["still here"]
    finally:
        stack.stop()


def test_a_turn_that_cannot_renew_its_lease_stops_its_tool_before_the_lease_can_expire(
    tmp_path: Path, durable_redis: DurableRedis, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    """Redis goes away for longer than the lease TTL while a tool runs. The worker cannot renew,
    so it must kill the tool before the lease could lapse and the session pass to another worker;
    once Redis is back the janitor reports the call's outcome as unknown and nothing runs twice."""
    sleep = sleep_marker()
    ttl_s = 8
    stack = Stack(
        open_for_the_sandbox(tmp_path), durable_redis.url, fake_slack.api_url, fake_llm.base_url,
        **UNATTENDED, LEASE_TTL_SECONDS=str(ttl_s), JANITOR_INTERVAL_SECONDS="1",
    ).start()  # fmt: skip
    try:
        command = f"echo ran >> ran; sleep {sleep}"
        fake_llm.script(calls(("c1", "shell", {"command": command, "timeout": 120})))
        session = Session(Redis.from_url(durable_redis.url), fake_slack, "deploy it")
        wait_for(lambda: host_pids(sleep), timeout=30, what="the command to start")

        durable_redis.stop()
        wait_for(lambda: not host_pids(sleep), timeout=ttl_s, what="the tool to stop within the lease TTL")
        durable_redis.start()

        wait_for(lambda: session.state() == "interrupted", timeout=60, what="the janitor to mark the turn")
        wait_for(lambda: session.notices("unknown_result"), what="the unknown-result notice")
        assert [(n.tool_call_id, n.tool_name) for n in session.notices("unknown_result")] == [("c1", "shell")]
        assert not [r for r in session.wire() if r.get("event", {}).get("type") == "tool.result"]
        assert (workspace_of(tmp_path, session.key) / "ran").read_text().split() == ["ran"]
        assert len(fake_llm.requests) == 1
    finally:
        for pid in host_pids(sleep):
            os.kill(pid, signal.SIGKILL)
        stack.stop()


def test_a_parked_approval_survives_a_restart_of_every_process_and_of_redis(
    tmp_path: Path, durable_redis: DurableRedis, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    env = {**UNATTENDED, "APPROVAL_WAIVED_TOOLS": ""}  # shell asks, as in production
    urls = (durable_redis.url, fake_slack.api_url, fake_llm.base_url)
    stack = Stack(open_for_the_sandbox(tmp_path), *urls, **env).start()
    try:
        fake_llm.script(calls(("c1", "shell", {"command": "echo yes > deployed"})), text("deployed"))
        key = start(stack, fake_slack, "deploy")
        card = card_with(fake_slack, key, "Approve")
        redis = Redis.from_url(durable_redis.url)
        wait_for(lambda: state(redis, key) == "awaiting_approval", what="the parked turn")

        stack.stop()
        durable_redis.restart()
        stack = Stack(tmp_path, *urls, **env).start()

        assert click(stack, fake_slack, card, "Approve") == "Approved `shell`."
        wait_for(lambda: "deployed" in thread_texts(fake_slack, "C111", key.thread_ts), timeout=60,
                 what="the answer after the approval")  # fmt: skip
        assert (workspace_of(tmp_path, key) / "deployed").read_text() == "yes\n"
        assert len(fake_llm.accepted()) == 2
    finally:
        stack.stop()
