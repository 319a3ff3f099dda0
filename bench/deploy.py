"""Deploys under load: every worker gets SIGTERM mid-turn and new workers start at once (issue 19).

    python -m bench.deploy [--turns 20] [--rounds 3] [--drain-seconds 20]

Each round starts `--turns` sessions with mentions to the real `web` and waits until a worker has
taken every turn and each has asked the model: a third wait on a model that answers after 60 s, a
third run a 3 s tool (those taken first may have ended), the rest a 60 s tool. Then SIGTERM goes
to every `threadline worker` at once and as many new ones start. A round ends when every thread
has its answer or, for a turn nobody handed over, when 90 s pass. Per round: turns completed,
the 60 s tools the drain stopped (each reads "stopped after N s because the worker restarted"),
unknown-result notices, turns left needing `!resume`, and the time from SIGTERM to each old
worker's exit (target: WORKER_DRAIN_SECONDS + 2 s at most).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redis import Redis

from agent.testing import FakeLLM, Reply, calls, text
from bench.events import app_mention
from bench.threads import wait_until
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.stack import BOT_TOKEN, THREADLINE, Stack
from jobs.keys import SessionKey, wire_key
from jobs.session.store import SessionStore

KINDS = ("model", "tool3", "tool60")
WORKERS = 2  # `threadline worker` processes ("machines"); their turn workers hold every turn at once
ROUND_TIMEOUT_S = 90
ANSWER = "finished"
RESTARTED = "because the worker restarted"


def model(asked: dict[str, int]) -> Any:
    """The fake provider: the first request of a `model` turn takes 60 s (the deploy lands
    during it); a tool turn asks for its tool once; every other request answers."""

    def reply(body: dict[str, Any]) -> Reply:
        prompt = str(next(m["content"] for m in body["messages"] if m["role"] == "user"))
        kind = next(kind for kind in KINDS if f"[{kind}]" in prompt)
        asked[prompt] = asked.get(prompt, 0) + 1
        if any(m["role"] == "tool" for m in body["messages"]):
            return text(ANSWER)
        if kind == "model":
            answer = text(ANSWER)
            answer.delay_s = 60 if asked[prompt] == 1 else 0
            return answer
        seconds = 3 if kind == "tool3" else 60
        return calls(("c1", "shell", {"command": f"sleep {seconds}", "timeout": 300}))

    return reply


@dataclass
class Round:
    completed: int
    restarted: int  # tool calls the drain stopped ("... because the worker restarted ...")
    unknown: int
    need_resume: int
    exits_s: list[float]


def start_turns(
    stack: Stack, slack: FakeSlack, redis: Redis, asked: dict[str, int], round_: int, turns: int
) -> list[SessionKey]:
    keys = []
    for index in range(turns):
        kind = KINDS[index % len(KINDS)]
        words = f"[{kind}] round {round_} job {index}"
        person = f"W{round_:02d}{index:04d}"  # one each: the per-person quotas refuse none
        root = slack.add_user_message(f"C{100 + index}", f"<@{BOT_USER_ID}> {words}", user=person)
        stack.send_event(app_mention(root["ts"], root["channel"], words, f"Evd{round_}x{index}", user=person))
        keys.append(SessionKey(team="T111", channel=root["channel"], thread_ts=root["ts"]))
    wait_until(lambda: all(_started(redis, key) for key in keys), 60, "every turn to start")
    this_round = f"round {round_} job"
    wait_until(
        lambda: sum(this_round in prompt for prompt in asked) >= turns, 60, "every turn to ask the model"
    )
    time.sleep(1.0)  # the tools the model asked for have started
    return keys


def deploy(stack: Stack, old: list[str], new: list[str]) -> list[float]:
    """SIGTERM every old worker at once, start the new ones, and time each old one's exit."""
    processes = [stack.processes[name] for name in old]
    sent = time.monotonic()
    for process in processes:
        os.kill(process.pid, signal.SIGTERM)
    for name in new:
        stack.spawn(name, [THREADLINE, "worker"])
    exits = []
    for process in processes:
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
        exits.append(time.monotonic() - sent)
    return exits


def outcome(redis: Redis, slack: FakeSlack, keys: list[SessionKey], exits: list[float]) -> Round:
    def answered(key: SessionKey) -> bool:
        return any(
            ANSWER in m.get("text", "") for m in slack.thread(key.channel, key.thread_ts) if m.get("bot_id")
        )

    wait_until(lambda: all(answered(key) for key in keys), ROUND_TIMEOUT_S, "every answer")
    unknown = sum(
        1
        for key in keys
        for _, notice in SessionStore(redis, key).notices()
        if notice.kind == "unknown_result"
    )
    stuck = sum(1 for key in keys if _state(redis, key) in ("interrupted", "failed", "cancelled"))
    restarted = sum(_stopped_by_drain(redis, key) for key in keys)
    return Round(sum(1 for key in keys if answered(key)), restarted, unknown, stuck, exits)


def _stopped_by_drain(redis: Redis, key: SessionKey) -> int:
    entries = redis.xrange(wire_key(key))
    return sum(1 for _, fields in entries if RESTARTED.encode() in b"".join(fields.values()))


def _started(redis: Redis, key: SessionKey) -> bool:
    """A worker has taken the turn (it may already have ended: a 3 s tool started early)."""
    meta = SessionStore(redis, key).meta
    return meta.exists() and meta.read().state != "queued"


def _state(redis: Redis, key: SessionKey) -> str:
    return SessionStore(redis, key).meta.read().state


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--drain-seconds", type=float, default=20)
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    args = parser.parse_args()
    redis = Redis.from_url(args.redis)
    redis.flushdb()
    asked: dict[str, int] = {}
    slack, llm = FakeSlack(bot_token=BOT_TOKEN).start(), FakeLLM(default=model(asked)).start()
    workers = WORKERS
    env = {"APPROVAL_WAIVED_TOOLS": "shell", "WORKER_DRAIN_SECONDS": str(args.drain_seconds),
           "TURN_CONCURRENCY": str(-(-args.turns // WORKERS))}  # fmt: skip
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp).chmod(0o711)  # a root run's sandboxed shell (another uid) must reach the workspaces
        stack = Stack(Path(tmp), args.redis, slack.api_url, llm.base_url, **env).start(workers=workers)
        try:
            names = [f"worker{index}" for index in range(workers)]
            for number in range(args.rounds):
                keys = start_turns(stack, slack, redis, asked, number, args.turns)
                successors = [f"worker{(number + 1) * workers + index}" for index in range(workers)]
                exits = deploy(stack, names, successors)
                names = successors
                rounds.append(outcome(redis, slack, keys, exits))
        finally:
            stack.stop()
            slack.stop()
            llm.stop()
    report(rounds, args, workers)


def report(rounds: list[Round], args: argparse.Namespace, workers: int) -> None:
    print(
        f"{args.turns} turns in flight per round ({', '.join(KINDS)} mixed) on {workers} `threadline worker`"
        f" processes, WORKER_DRAIN_SECONDS={args.drain_seconds:g}"
    )
    header = ("round", "completed", "tools stopped", "unknown notices", "!resume needed", "SIGTERM→exit s")
    widths = (5, 9, 13, 15, 14, 14)
    print(" ".join(f"{word:>{width}}" for word, width in zip(header, widths, strict=True)))
    for number, round_ in enumerate(rounds, 1):
        completed = f"{round_.completed}/{args.turns}"
        print(
            f"{number:>5} {completed:>9} {round_.restarted:>13} {round_.unknown:>15}"
            f" {round_.need_resume:>14} {max(round_.exits_s):>14.1f}"
        )
    worst = max(max(round_.exits_s) for round_ in rounds)
    target = args.drain_seconds + 2
    print(f"slowest exit {worst:.1f} s {'<=' if worst <= target else '>'} target {target:g} s")


if __name__ == "__main__":
    main()
