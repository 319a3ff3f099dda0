"""Redis that fails over (issue 32): acknowledging means replicated, and a Sentinel failover
mid-turn or mid-burst loses nothing acknowledged and runs nothing twice."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from redis import Redis

from agent.testing import FakeLLM, calls, text
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.redis_servers import ReplicatedRedis
from gateway.sandbox.stack import Stack
from jobs.keys import SessionKey
from jobs.redis_connect import RedisTarget, connect
from jobs.session.state import WORKING_STATES
from jobs.settings import Settings
from tests.e2e.test_live_turns import state
from tests.e2e.turns import Session
from tests.polling import wait_for
from tests.sandboxing import open_for_the_sandbox, workspace_of
from tests.sentinel_redis import SentinelRedis
from tests.slack_events import mention
from tests.unattended import UNATTENDED

ACK_TIMEOUT_MS = 300


@pytest.fixture
def replicated_redis(tmp_path: Path) -> Iterator[ReplicatedRedis]:
    servers = ReplicatedRedis(tmp_path / "redis").start()
    yield servers
    servers.stop()


@pytest.fixture
def sentinel_redis(tmp_path: Path) -> Iterator[SentinelRedis]:
    servers = SentinelRedis(tmp_path / "redis").start()
    yield servers
    servers.stop()


def answers(slack: FakeSlack, ts: str, channel: str = "C111") -> list[str]:
    return [m.get("text", "") for m in slack.thread(channel, ts) if m.get("bot_id")]


def retried(stack: Stack, body: dict, attempt: int) -> httpx.Response:
    """The event as Slack redelivers it after a refusal."""
    headers = {"X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": "http_error"}
    return stack.send_event(body, headers=headers)


def sent_by_slack(stack: Stack) -> Callable[[dict, int], object]:
    """Sends an event's `attempt`th delivery; its status, or "timeout" (Slack waits 3 s)."""

    def send(body: dict, attempt: int) -> object:
        try:
            return (retried(stack, body, attempt) if attempt else stack.send_event(body)).status_code
        except httpx.TimeoutException:
            return "timeout"

    return send


def test_an_input_no_replica_holds_in_time_is_refused_and_its_retry_answered_once(
    tmp_path: Path, replicated_redis: ReplicatedRedis, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    stack = Stack(
        tmp_path, replicated_redis.primary_url, fake_slack.api_url, fake_llm.base_url,
        REDIS_MIN_REPLICAS_ACK="1", REDIS_ACK_TIMEOUT_MS=str(ACK_TIMEOUT_MS),
    ).start()  # fmt: skip
    try:
        fake_llm.default = lambda body: text("answered once")
        root = fake_slack.add_user_message("C111", "<@UBOT0001> hello", user="W222")
        body = mention("hello", ts=root["ts"])
        replicated_redis.pause_replica()
        refused = stack.send_event(body)
        assert refused.status_code == 503
        assert "not replicated" in refused.json()["error"]
        assert "replicas hold event" in stack.log("web")

        replicated_redis.resume_replica()
        assert retried(stack, body, 1).status_code == 200
        wait_for(lambda: answers(fake_slack, root["ts"]), timeout=60, what="the answer")
        assert retried(stack, body, 2).status_code == 200  # a duplicate now: nothing new
        key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
        redis = Redis.from_url(replicated_redis.primary_url)
        wait_for(lambda: state(redis, key) == "idle", what="the turn to end")
        assert answers(fake_slack, root["ts"]) == ["answered once"]
        assert len(fake_llm.accepted()) == 1
    finally:
        stack.stop()


def test_inputs_are_acknowledged_while_the_replica_keeps_up(
    tmp_path: Path, replicated_redis: ReplicatedRedis, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    # The deployed bound (REDIS_ACK_TIMEOUT_MS's default), not the refusal test's 300 ms: a loaded
    # CI machine once took longer than that to get a healthy replica's answer to WAIT.
    stack = Stack(
        tmp_path, replicated_redis.primary_url, fake_slack.api_url, fake_llm.base_url,
        REDIS_MIN_REPLICAS_ACK="1",
    ).start(workers=0)  # fmt: skip
    try:
        for n in range(5):
            root = fake_slack.add_user_message("C111", f"<@UBOT0001> hello {n}", user="W222")
            assert stack.send_event(mention(f"hello {n}", ts=root["ts"])).status_code == 200
        replica = replicated_redis.replica.client()
        assert len(replica.keys("tl:dedupe:*")) >= 5  # each acknowledged input is on the replica
    finally:
        stack.stop()


def sentinel_client(servers: SentinelRedis) -> Redis:
    """The test's own view of the data: the current primary, whichever server that is."""
    return connect(RedisTarget.of(Settings.load(REDIS_URL=servers.url, **servers.settings)))


def test_a_failover_while_a_tool_runs_loses_nothing_and_runs_the_tool_once(
    tmp_path: Path, sentinel_redis: SentinelRedis, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    stack = Stack(
        open_for_the_sandbox(tmp_path), sentinel_redis.url, fake_slack.api_url, fake_llm.base_url,
        **UNATTENDED, **sentinel_redis.settings,
    ).start()  # fmt: skip
    try:
        command = "echo ran >> ran; while [ ! -e go ]; do sleep 0.05; done"
        fake_llm.script(calls(("c1", "shell", {"command": command})), text("deployed"))
        session = Session(sentinel_client(sentinel_redis), fake_slack, "deploy it")
        workspace = workspace_of(tmp_path, session.key)
        wait_for(lambda: (workspace / "ran").exists(), timeout=30, what="the command to start")

        sentinel_redis.fail_over()  # SIGKILL of the primary while the command runs
        (workspace / "go").touch()  # its result is written after the failover

        wait_for(lambda: "deployed" in session.bot_texts(), timeout=90, what="the answer after the failover")
        wait_for(lambda: session.state() == "idle", what="the turn to end")
        assert session.bot_texts().count("deployed") == 1
        assert (workspace / "ran").read_text().split() == ["ran"]
        results = [r for r in session.wire() if r.get("event", {}).get("type") == "tool.result"]
        assert len(results) == 1
        assert not session.notices("unknown_result")
        assert len(fake_llm.accepted()) == 2
        assert all(process.poll() is None for process in stack.processes.values())  # no restart
    finally:
        stack.stop()


def fail_over_and_back(servers: SentinelRedis) -> None:
    """The primary dies, the replica takes over, the old primary comes back as its replica: until
    then no replica holds an input, so none is acknowledged."""
    servers.fail_over()
    servers.bring_back_old_primary()


MENTIONS, BEFORE_FAILOVER = 50, 20
RETRYABLE = {503, "timeout"}
JOB = re.compile(r"job \d+")


def test_fifty_mentions_sent_across_a_failover_are_each_answered_exactly_once(
    tmp_path: Path, sentinel_redis: SentinelRedis, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    # A turn the failover cuts short is recovered once its lease lapses: a short lease and a
    # busy janitor keep that to seconds. Not shorter: a turn stops once half its lease passed
    # without a renewal, and a loaded machine has starved the worker's loop for over 4 s.
    stack = Stack(
        tmp_path, sentinel_redis.url, fake_slack.api_url, fake_llm.base_url,
        **sentinel_redis.settings, LEASE_TTL_SECONDS="12", JANITOR_INTERVAL_SECONDS="1",
    ).start()  # fmt: skip
    try:
        fake_llm.default = lambda body: text(f"answer to {JOB.findall(str(body['messages']))[-1]}")
        # Each by another person in a channel of their own: no quota refuses any of them.
        people = [(f"C{1000 + n}", f"W{n:06d}") for n in range(MENTIONS)]
        roots = [
            fake_slack.add_user_message(channel, f"<@UBOT0001> job {n}", user)
            for n, (channel, user) in enumerate(people)
        ]
        bodies = [
            mention(f"job {n}", ts=root["ts"], channel=root["channel"], user=user)
            for n, (root, (_, user)) in enumerate(zip(roots, people, strict=True))
        ]
        refusals: list[object] = []
        send = sent_by_slack(stack)

        def deliver(n: int) -> None:
            """As Slack does: the event again, spaced, until it is acknowledged."""
            deadline = time.monotonic() + 90
            attempt = 0
            while (status := send(bodies[n], attempt)) != 200:
                refusals.append(status)
                assert time.monotonic() < deadline, f"job {n} was never acknowledged"
                attempt += 1
                time.sleep(0.2)

        with ThreadPoolExecutor(10) as senders:
            list(senders.map(deliver, range(BEFORE_FAILOVER)))
            failover = threading.Thread(target=fail_over_and_back, args=(sentinel_redis,))
            failover.start()
            during = list(senders.map(deliver, range(BEFORE_FAILOVER, MENTIONS)))
            failover.join()
        assert len(during) == MENTIONS - BEFORE_FAILOVER
        assert refusals, "no mention met the failover"
        assert set(refusals) <= RETRYABLE, refusals

        every_answer = lambda: all(answers(fake_slack, root["ts"], root["channel"]) for root in roots)  # noqa: E731
        wait_for(every_answer, timeout=120, what="an answer in every thread")
        redis = sentinel_client(sentinel_redis)
        keys = [SessionKey(team="T111", channel=root["channel"], thread_ts=root["ts"]) for root in roots]
        # A turn the failover cut short ends later (recovered by the janitor), in whatever state:
        # only once none is working is "one answer each" final.
        ended = lambda: not any(state(redis, key) in WORKING_STATES for key in keys)  # noqa: E731
        wait_for(ended, timeout=90, what="every turn to end")
        for n, root in enumerate(roots):
            assert answers(fake_slack, root["ts"], root["channel"]) == [f"answer to job {n}"]
        assert all(process.poll() is None for process in stack.processes.values())
    finally:
        stack.stop()
