"""The ugly cases of a worker's shared event loop (docs/turn-worker.md): a Redis that answers in
500 ms, a tool stuck in a blocking read, a card written over while it is composed. With 16 turns
of one default worker stepping through tool calls meanwhile, none of them may hold up the loop
the other turns share.

The measure is the turns worker's own watch (jobs.turn.loop_watch): when its loop is late, it
names the kernel wait the loop thread sleeps in, and logs one that is neither the loop's wait for
events nor the GIL's. A loaded machine makes a loop late on its own (the scheduler, the GIL: up
to seconds on a 2-core machine running three test stacks), so lateness alone proves nothing; a
call that blocks the loop shows as the loop thread asleep in that call, whatever the load.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from redis import Redis

from agent.testing import FakeLLM, Reply, calls, text
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import Stack
from jobs.keys import card_key
from tests.e2e.sessions import link, slash_command
from tests.e2e.turns import Session
from tests.polling import wait_for
from tests.slow_redis import SlowRedis
from tests.unattended import UNATTENDED

AT_ONCE = 16
STEPS = 12  # tool steps of each turn
STALL_WARN_MS = 100
SLOW_ANSWER_S = 0.5
SLOW_FOR_S = 10.0
CONTENDED_FOR_S = 2.0
BLOCKED_LINE = re.compile(r"the turns worker's event loop is blocked in the kernel .*")  # not delivery's


@pytest.fixture
def slow_redis(redis_url: str) -> Iterator[SlowRedis]:
    server = urlsplit(redis_url)
    proxy = SlowRedis(server.hostname or "127.0.0.1", server.port or 6379)
    yield proxy
    proxy.close()


class Walks:
    """The fake model's side of AT_ONCE turns: each walks STEPS globs, then answers "done <name>".

    A turn whose first message starts with "stuck" is sent into the blocked read instead."""

    def __init__(self, fake_llm: FakeLLM) -> None:
        self.asked: list[tuple[float, str]] = []
        self.held = False  # while set, every walk but "walk 0" goes on stepping past STEPS
        self._lock = threading.Lock()
        fake_llm.default = self.answer

    def answer(self, body: dict[str, Any]) -> Reply:
        name = first_user_text(body)
        done = sum(1 for message in body["messages"] if message["role"] == "tool")
        with self._lock:
            self.asked.append((time.monotonic(), name))
        if name.startswith("stuck") and done == 0:
            return calls(("r", "shell", {"command": "mkfifo pipe && cat pipe"}))
        if done < STEPS or (self.held and name != "walk 0"):
            return calls((f"g{done}", "glob", {"pattern": f"step{done}-*"}))
        return text(f"done {name}")

    def asked_since(self, since: float) -> set[str]:
        with self._lock:
            return {name for at, name in self.asked if at >= since}


def first_user_text(body: dict[str, Any]) -> str:
    """What the session's first message said, without the "<@user>: " the gateway puts first."""
    for message in body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            said = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
            return said.split(": ", 1)[-1]
    return ""


def start(tmp_path: Path, redis_url: str, fake_slack: FakeSlack, fake_llm: FakeLLM) -> Stack:
    env = {
        **UNATTENDED,
        "TURN_CONCURRENCY": str(AT_ONCE),
        "LOOP_STALL_WARN_MS": str(STALL_WARN_MS),
        "MAX_STEPS_PER_TURN": "100000",  # held walks step for as long as a fault lasts
    }
    return Stack(tmp_path, redis_url, fake_slack.api_url, fake_llm.base_url, **env).start()


def blocked_loop(stack: Stack) -> list[str]:
    return BLOCKED_LINE.findall(stack.log("worker0"))


def walking(redis: Redis, fake_slack: FakeSlack, count: int = AT_ONCE) -> dict[str, Session]:
    """`count` sessions, each asked to walk: "walk 0", "walk 1", …"""
    return {f"walk {index}": Session(redis, fake_slack, f"walk {index}") for index in range(count)}


def all_answered(walks: dict[str, Session]) -> None:
    for name, session in walks.items():
        wait_for(lambda s=session, n=name: answered(s, n), timeout=120, what=f"the answer of {name}")


def answered(session: Session, name: str) -> bool:
    return any(f"done {name}" in said for said in session.bot_texts())


def hold(seconds: float, check: Any) -> None:
    """Keep a fault on for `seconds` (its length is the fault, not a wait for anything)."""
    until = time.monotonic() + seconds
    wait_for(lambda: time.monotonic() >= until and check(), timeout=seconds + 60, what="the fault's span")


def test_a_redis_answering_in_half_a_second_for_ten_seconds_stalls_no_turn(
    tmp_path: Path,
    redis: Redis,
    redis_url: str,
    slow_redis: SlowRedis,
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
) -> None:
    walks = Walks(fake_llm)
    database = int(urlsplit(redis_url).path.lstrip("/") or 0)
    stack = start(tmp_path, slow_redis.url(database), fake_slack, fake_llm)
    try:
        sessions = walking(redis, fake_slack)
        wait_for(lambda: walks.asked_since(0) >= set(sessions), timeout=60, what="every turn's first step")
        with slow_redis.slow(SLOW_ANSWER_S):
            slowed_at = time.monotonic()
            hold(SLOW_FOR_S, lambda: len(walks.asked_since(slowed_at)) >= 2)
        all_answered(sessions)
        assert all(session.state() == "idle" for session in sessions.values())
        assert blocked_loop(stack) == []
    finally:
        stack.stop()


def test_a_tool_stuck_in_a_blocking_read_holds_up_no_other_turn_and_still_stops(
    tmp_path: Path, redis: Redis, redis_url: str, fake_slack: FakeSlack, fake_llm: FakeLLM
) -> None:
    Walks(fake_llm)
    stack = start(tmp_path, redis_url, fake_slack, fake_llm)
    try:
        stuck = Session(redis, fake_slack, "stuck on a pipe")
        wait_for(lambda: "mkfifo" in str(stuck.wire()), what="the stuck turn's shell call")
        all_answered(walking(redis, fake_slack, AT_ONCE - 1))
        assert stuck.state() == "running"
        answer = slash_command(stack, fake_slack, f"cancel {link(fake_slack, stuck.key)}")
        assert "Stopping" in answer
        wait_for(lambda: stuck.state() == "cancelled", timeout=30, what="the stuck turn to stop")
        assert blocked_loop(stack) == []
    finally:
        stack.stop()


def test_a_card_written_over_for_two_seconds_while_it_is_composed_stalls_no_turn(
    tmp_path: Path, redis: Redis, redis_url: str, fake_slack: FakeSlack, fake_llm: FakeLLM
) -> None:
    walks = Walks(fake_llm)
    walks.held = True  # the other turns still walk while the card is contended, however late that starts
    stack = start(tmp_path, redis_url, fake_slack, fake_llm)
    try:
        sessions = walking(redis, fake_slack)
        contended = sessions["walk 0"]
        wait_for(lambda: redis.exists(card_key(contended.key)), timeout=60, what="the first turn's card")
        rewrite = redis.register_script(
            "local card = redis.call('GET', KEYS[1]) "
            "if card then redis.call('SET', KEYS[1], card, 'KEEPTTL') end"
        )
        # Contended for its span, and on until another turn has stepped meanwhile (a loaded
        # machine may take longer than the span to step any turn at all).
        contending_from = time.monotonic()
        while time.monotonic() - contending_from < CONTENDED_FOR_S or not (
            walks.asked_since(contending_from) - {"walk 0"}
        ):
            assert time.monotonic() - contending_from < CONTENDED_FOR_S + 60, "no other turn stepped"
            rewrite(keys=[card_key(contended.key)])  # every compose of this card sees it changed
        walks.held = False
        all_answered(sessions)
        assert blocked_loop(stack) == []
    finally:
        stack.stop()
