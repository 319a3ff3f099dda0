"""Redis bytes and disk bytes of finished sessions, before and after their retention sweep (issue 18).

    python -m bench.retention [--sessions 100] [--redis redis://127.0.0.1:6379]

Real `threadline worker` processes run one turn per session against a fake model (a
`write_file` of ~8 KB, then an answer) and deliver it to the fake Slack, so each session has
its wire log, outbox, ledger, meta and workspace as production writes them. The workers stop;
the sessions are made 31 days old in the index, and `jobs.retention.sweep` runs (the function
every worker calls), in batches of 200 as a worker would. Measured before and after:

- Redis bytes: MEMORY USAGE summed over every key of the sessions (SAMPLES 0: every element),
  and INFO used_memory;
- disk bytes of their workspaces, as du counts them (the channel's directory stays: 4 KB).

It uses a database of its own: the first one with no keys and no other clients.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from redis import Redis

from agent.testing import FakeLLM, Reply, calls, text
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import BOT_TOKEN, THREADLINE, Stack
from jobs import retention
from jobs.control import submit_input
from jobs.keys import RETENTION_LOCK, SESSION_INDEX, SessionKey
from jobs.session.store import SessionStore, now_ms
from jobs.session.user_input import UserInput
from jobs.settings import Settings
from jobs.turn.workspace import disk_bytes

WORKERS = 2
FILE_BYTES = 8_000
TEAM, CHANNEL = "T1", "C1"


def reply(body: dict) -> Reply:
    """A file on the first step, the answer on the second: one tool step per turn."""
    if body["messages"][-1]["role"] == "tool":
        return text("written, and here is the summary")
    return calls(("c1", "write_file", {"path": "notes.md", "content": "n" * FILE_BYTES}))


def free_database(url: str) -> str:
    redis = Redis.from_url(url)
    mine = redis.client_id()
    busy = {int(c["db"]) for c in redis.client_list() if int(c["id"]) != mine}
    for db in range(13, 0, -1):
        if db not in busy and Redis.from_url(urlsplit(url)._replace(path=f"/{db}").geturl()).dbsize() == 0:
            return urlsplit(url)._replace(path=f"/{db}").geturl()
    raise SystemExit("no empty Redis database without other clients")


def run_sessions(redis: Redis, slack: FakeSlack, count: int) -> list[SessionKey]:
    keys = []
    for index in range(count):
        root = slack.add_user_message(CHANNEL, f"take notes {index}", user="U1")
        key = SessionKey(team=TEAM, channel=CHANNEL, thread_ts=root["ts"])
        submit_input(
            redis, key, UserInput(text=f"take notes {index}", user="U1", ts=root["ts"]), turn_timeout_s=600
        )
        keys.append(key)
    deadline = time.monotonic() + 600
    while not all(settled(redis, key) for key in keys):
        if time.monotonic() > deadline:
            raise RuntimeError("the turns did not finish within 10 minutes")
        time.sleep(0.2)
    return keys


def settled(redis: Redis, key: SessionKey) -> bool:
    store = SessionStore(redis, key)
    meta = store.meta.read()
    notices = store.notices()
    return meta.last_turn_reason == "completed" and bool(notices) and meta.delivered == notices[-1][0]


def measure(redis: Redis, workdir: Path) -> dict[str, int]:
    names = [name.decode() for name in redis.scan_iter(match=f"tl:{{{TEAM}:{CHANNEL}:*", count=1000)]
    return {
        "keys": len(names),
        "redis_bytes": sum(retention.memory_usage(redis, names).values()),
        "used_memory": int(redis.info("memory")["used_memory"]),
        "disk_bytes": disk_bytes(workdir / TEAM / CHANNEL) if (workdir / TEAM / CHANNEL).exists() else 0,
    }


def sweep_all(redis: Redis, settings: Settings, keys: list[SessionKey]) -> tuple[int, float]:
    """Age every session past the retention, then sweep as the workers would until none is left."""
    old = now_ms() - 31 * retention.DAY_MS
    redis.zadd(SESSION_INDEX, {str(key): old for key in keys})
    for key in keys:
        redis.hset(SessionStore(redis, key).meta.key, "updated", str(old))
    removed, started = 0, time.perf_counter()
    while True:
        redis.delete(RETENTION_LOCK)  # as if the interval had passed
        swept = retention.sweep(redis, settings)
        removed += len(swept)
        if not swept:
            return removed, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379")
    args = parser.parse_args()
    url = free_database(args.redis)
    redis = Redis.from_url(url)
    slack, llm = FakeSlack(bot_token=BOT_TOKEN).start(), FakeLLM(default=reply).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            stack = Stack(Path(tmp), url, slack.api_url, llm.base_url, APPROVAL_TOOLS="")
            for index in range(WORKERS):
                stack.spawn(f"worker{index}", [THREADLINE, "worker"])
            try:
                keys = run_sessions(redis, slack, args.sessions)
            finally:
                stack.stop()
            workdir = Path(stack.env["AGENT_WORKDIR"])
            settings = Settings(AGENT_WORKDIR=workdir, REDIS_URL=url)
            before = measure(redis, workdir)
            removed, took = sweep_all(redis, settings, keys)
            after = measure(redis, workdir)
    finally:
        slack.stop()
        llm.stop()
        redis.flushdb()
    print(f"{args.sessions} finished sessions (one turn: a write_file of {FILE_BYTES:,} bytes, an answer)")
    print(f"swept {removed} in {took:.2f} s")
    print(f"{'':34}{'before':>14}{'after':>14}")
    rows = [
        ("session keys", "keys"),
        ("Redis bytes (MEMORY USAGE)", "redis_bytes"),
        ("Redis used_memory (INFO)", "used_memory"),
        ("workspace disk bytes (du)", "disk_bytes"),
    ]
    for label, name in rows:
        print(f"{label:34}{before[name]:>14,}{after[name]:>14,}")


if __name__ == "__main__":
    main()
