"""Redis restarts (with AOF) during a turn: nothing acknowledged is lost, nobody needs a restart."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.testing import FakeLLM, Reply, text
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import THREADLINE, Stack
from tests.durable_redis import DurableRedis
from tests.polling import wait_for
from tests.slack_events import mention


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
