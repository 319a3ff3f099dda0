"""What delegation costs: hand-off to sub-agents and back, and the workspace write lock.

    python -m bench.delegation [--runs 20] [--redis redis://127.0.0.1:6379/10]

Real `threadline worker` processes (this checkout's code) against real Redis and a fake model
that answers at once. Each run is a parent whose first step starts two foreground sub-agents
that answer at once:

- spawn: from the parent's first model request to each sub-agent's first model request (the
  parent's tool batch, the child sessions written, the jobs enqueued and picked up);
- continuation: from the last sub-agent's model request to the parent's next one (the child's
  turn ending, its answer recorded, the parent's continuation enqueued and started);
- the whole delegated turn, from the person's message to the parent's answer.

And, in this process: one uncontended acquire + release of the workspace write lock, which
every writing tool call pays.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from redis import Redis

from agent.testing import FakeLLM, Reply, calls, text
from agent.tools import accesses as acc
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import BOT_TOKEN, THREADLINE, Stack
from jobs.control import submit_input
from jobs.delegation.write_lock import RedisWriteLock
from jobs.keys import SessionKey
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput

WARMUP_RUNS = 2
LOCK_HOLDS = 2_000


class Clock:
    """Answers parent and children at once, and notes when each request arrived."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, int], float] = {}
        self.lock = threading.Lock()

    def reply(self, body: dict) -> Reply:
        now = time.perf_counter()
        last_user = next(m for m in reversed(body["messages"]) if m["role"] == "user")
        task = str(last_user.get("content", ""))
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        with self.lock:
            self.seen.setdefault((task, step), now)
        if task.startswith("CHILD"):
            return text("child answer")
        if step == 0:
            return calls(
                ("a1", "Agent", {"prompt": f"CHILD-1 of {task}", "description": "one"}),
                ("a2", "Agent", {"prompt": f"CHILD-2 of {task}", "description": "two"}),
            )
        return text("parent answer")


def one_run(redis: Redis, slack: FakeSlack, clock: Clock, index: int) -> dict[str, float]:
    root = slack.add_user_message("C1", f"run {index}", user="U1")
    key = SessionKey(team="T1", channel="C1", thread_ts=root["ts"])
    started = time.perf_counter()
    submit_input(redis, key, UserInput(text=f"run {index}", user="U1", ts=root["ts"]), turn_timeout_s=600)
    store = SessionStore(redis, key)
    while store.meta.read().last_turn_reason != "completed":
        time.sleep(0.001)
    parent = f"<@U1>: run {index}"
    children = [f"CHILD-{n} of {parent}" for n in (1, 2)]
    first = clock.seen[(parent, 0)]
    return {
        "spawn": statistics.mean(clock.seen[(child, 0)] - first for child in children) * 1000,
        "continuation": (clock.seen[(parent, 1)] - max(clock.seen[(c, 0)] for c in children)) * 1000,
        "turn": (time.perf_counter() - started) * 1000,
    }


def handoffs(redis_url: str, runs: int, workers: int) -> list[dict[str, float]]:
    clock = Clock()
    slack, llm = FakeSlack(bot_token=BOT_TOKEN).start(), FakeLLM(default=clock.reply).start()
    redis = Redis.from_url(redis_url)
    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(Path(tmp), redis_url, slack.api_url, llm.base_url, APPROVAL_TOOLS="")
        for number in range(workers):
            stack.spawn(f"worker{number}", [THREADLINE, "worker"])
        try:
            results = [one_run(redis, slack, clock, index) for index in range(runs + WARMUP_RUNS)]
        finally:
            stack.stop()
            slack.stop()
            llm.stop()
    return results[WARMUP_RUNS:]


def lock_hold_us(redis: Redis) -> float:
    lock = RedisWriteLock(redis, Path("/bench/workspace"))
    writes = acc.write_file("/bench/workspace/a.txt")

    async def holds() -> float:
        started = time.perf_counter()
        for _ in range(LOCK_HOLDS):
            async with lock.hold(writes):
                pass
        return (time.perf_counter() - started) / LOCK_HOLDS * 1e6

    return asyncio.run(holds())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/10"))
    args = parser.parse_args()
    Redis.from_url(args.redis).flushdb()
    print(f"parent + 2 foreground sub-agents, model answers at once, {args.runs} runs (median / p90, ms)")
    for workers in (1, 2):
        results = handoffs(args.redis, args.runs, workers)
        for label in ("spawn", "continuation", "turn"):
            values = [r[label] for r in results]
            p90 = statistics.quantiles(values, n=10)[-1]
            print(f"  {workers} worker(s)  {label:13}{statistics.median(values):9.1f}{p90:9.1f}")
    redis = Redis.from_url(args.redis)
    print(f"workspace write lock, uncontended acquire + release: {lock_hold_us(redis):.0f} µs")
    redis.flushdb()


if __name__ == "__main__":
    main()
