"""Many sessions at once through the whole product (issue 9).

    python -m bench.load [--sessions 200] [--workers 4] [--model-ms 200] [--turn-concurrency N]

Sends N signed `app_mention` events (each a new thread) to the real `web` process as fast as
it takes them, each from a person of its own (so no per-person quota refuses them);
`--workers` real `threadline worker` processes (each running up to `--turn-concurrency` turns at
once; 1 is the one-turn-per-process model of before issue 19) run the turns against a fake
model that takes `--model-ms` per call and asks for one tool step per turn (so two model calls
per turn). Reports turns per second, p50 / p99 time from mention to the answer in its thread,
Redis memory per session, and whether any input was lost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from redis import Redis

from agent.testing import FakeLLM, Reply, calls, text
from bench.mention_latency import mention_body
from bench.threads import answer_times, wait_until
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.stack import BOT_TOKEN, Stack
from jobs.keys import SessionKey
from jobs.session.store import SessionStore

ANSWER = "done with this one"
CHANNELS = 50  # Slack paces posts per channel (~1/s); a real workload spreads over channels
SEND_THREADS = 16


def model(delay_s: float):
    def reply(body: dict) -> Reply:
        answered = any(m["role"] == "tool" for m in body["messages"])
        result = text(ANSWER) if answered else calls(("c1", "list_dir", {"path": "."}))
        result.delay_s = delay_s
        return result

    return reply


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--model-ms", type=float, default=200)
    parser.add_argument("--turn-concurrency", type=int, default=None, help="default: TURN_CONCURRENCY")
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    args = parser.parse_args()
    redis = Redis.from_url(args.redis)
    redis.flushdb()
    slack = FakeSlack(bot_token=BOT_TOKEN).start()
    llm = FakeLLM(default=model(args.model_ms / 1000)).start()
    with tempfile.TemporaryDirectory() as tmp:
        concurrency = {"TURN_CONCURRENCY": str(args.turn_concurrency)} if args.turn_concurrency else {}
        stack = Stack(Path(tmp), args.redis, slack.api_url, llm.base_url, APPROVAL_TOOLS="", **concurrency)
        stack.start(workers=args.workers)
        try:
            memory_before = int(redis.info("memory")["used_memory"])
            roots = [
                slack.add_user_message(f"C{100 + i % CHANNELS}", f"<@{BOT_USER_ID}> job {i}", user=person)
                for i, person in enumerate(f"W{i:06d}" for i in range(args.sessions))
            ]
            sent: dict[str, float] = {}

            def send(index: int) -> int:
                root = roots[index]
                sent[root["ts"]] = time.time()
                body = mention_body(root["ts"], index)
                body["event"].update(channel=root["channel"], user=root["user"])
                return stack.send_event(body).status_code

            started = time.time()
            with ThreadPoolExecutor(SEND_THREADS) as pool:
                statuses = list(pool.map(send, range(args.sessions)))
            timeout_s = 60 + args.sessions * args.model_ms / 1000
            wait_until(lambda: len(answer_times(slack, ANSWER)) >= args.sessions, timeout_s, "every answer")
            answered = answer_times(slack, ANSWER)
            finished = max(answered.values(), default=time.time())
            memory_after = int(redis.info("memory")["used_memory"])
            lost = _lost_inputs(redis, roots)
        finally:
            stack.stop()
    slack.stop()
    llm.stop()
    latencies = sorted((answered[ts] - sent[ts]) * 1000 for ts in answered)
    print(
        f"{args.sessions} sessions in {CHANNELS} channels, {args.workers} workers, "
        f"turn concurrency {args.turn_concurrency or 'TURN_CONCURRENCY (default 16)'}"
    )
    print(f"model: {args.model_ms:.0f} ms per call, 2 calls per turn (one tool step)")
    print(f"HTTP 200 for {statuses.count(200)} of {len(statuses)} mentions; answered {len(answered)}")
    print(f"turns per second: {len(answered) / (finished - started):.1f}")
    if latencies:
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        print(f"mention → answer: p50 {statistics.median(latencies):.0f} ms, p99 {p99:.0f} ms")
    print(f"Redis memory per session: {(memory_after - memory_before) / args.sessions / 1024:.1f} KiB")
    print(f"inputs lost: {lost} (sessions whose wire log lacks exactly one user message)")


def _lost_inputs(redis: Redis, roots: list[dict]) -> int:
    lost = 0
    for root in roots:
        key = SessionKey(team="T111", channel=root["channel"], thread_ts=root["ts"])
        wire = SessionStore(redis, key).read_wire()
        users = [r for r in wire if r["type"] == "context.append_message" and r["message"]["role"] == "user"]
        lost += len(users) != 1
    return lost


if __name__ == "__main__":
    main()
