"""Worker crashes at random points of multi-step turns, and what survives them (issue 9).

    python -m bench.chaos [--runs 20] [--seed 1] [--redis redis://127.0.0.1:6379/14]

Each run starts a turn of three steps (a shell command, a file write, an answer), SIGKILLs the
worker at a random point (during a model call, during a tool, between steps, during delivery),
starts a new worker, resumes the session if it was interrupted, and checks the promises:

- every user message is on the wire log exactly once;
- no tool call has two results;
- every call without a recorded result got exactly one unknown-result notice;
- no tool ran twice (each shell command appends its call id to a marker file);
- the session can be resumed and ends with exactly one answer in the thread.

tests/reliability runs a few of these in CI; this runs as many as you ask and prints the counts.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from redis import Redis

from agent.testing import FakeLLM, Reply, calls
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import BOT_TOKEN, THREADLINE, Stack
from jobs.control import resume, submit_input
from jobs.keys import SessionKey
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput

KILL_POINTS = ("model", "tool", "between", "delivery")
ANSWER = "All three steps are done."
DEADLINE_S = 60


@dataclass
class RunResult:
    point: str
    state_after_kill: str
    unknown_notices: int
    calls_without_result: int
    duplicate_user_messages: int
    duplicate_results: int
    tools_run_twice: int
    answers_in_thread: int
    resumed: bool


@dataclass
class ChaosReport:
    runs: list[RunResult] = field(default_factory=list)

    def broken(self) -> list[RunResult]:
        return [
            run
            for run in self.runs
            if run.duplicate_user_messages
            or run.duplicate_results
            or run.tools_run_twice
            or run.unknown_notices != run.calls_without_result
            or run.answers_in_thread != 1
        ]

    def lines(self) -> list[str]:
        points = collections.Counter(run.point for run in self.runs)
        states = collections.Counter(run.state_after_kill for run in self.runs)
        total = lambda name: sum(getattr(run, name) for run in self.runs)  # noqa: E731
        return [
            f"runs: {len(self.runs)}  kill points: {dict(points)}",
            f"state right after the kill: {dict(states)}",
            f"calls left without a result: {total('calls_without_result')}; "
            f"unknown-result notices: {total('unknown_notices')}",
            f"sessions resumed: {sum(run.resumed for run in self.runs)}; "
            f"answers in threads: {total('answers_in_thread')}",
            f"user messages on the wire twice: {total('duplicate_user_messages')}; "
            f"calls with two results: {total('duplicate_results')}; "
            f"tools run twice: {total('tools_run_twice')}",
            f"runs breaking a promise: {len(self.broken())}",
        ]


class Scenario:
    """One session's scripted turn and the hooks that tell the chaos where the turn is."""

    def __init__(self, llm: FakeLLM, marker: Path, rng: random.Random) -> None:
        self.llm = llm
        self.marker = marker
        self.in_model = threading.Event()
        self.rng = rng
        self.requests = 0

    def reply(self, body: dict) -> Reply:
        self.requests += 1
        self.in_model.set()
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        delay = self.rng.uniform(0.05, 0.4)
        if not any(m.get("tool_call_id") == "c1" for m in tools):
            command = f"echo c1 >> {self.marker.name}; sleep {self.rng.uniform(0.2, 1.0):.2f}"
            return _delayed(calls(("c1", "shell", {"command": command})), delay)
        if not any(m.get("tool_call_id") == "c2" for m in tools):
            return _delayed(calls(("c2", "write_file", {"path": "out.txt", "content": "x"})), delay)
        return Reply(text=ANSWER, delay_s=delay)


def _delayed(reply: Reply, delay: float) -> Reply:
    reply.delay_s = delay
    return reply


def one_run(
    index: int, point: str, rng: random.Random, redis: Redis, slack: FakeSlack, llm: FakeLLM, stack: Stack
) -> RunResult:
    root = slack.add_user_message("C1", f"run {index}", user="U1")
    key = SessionKey(team="T1", channel="C1", thread_ts=root["ts"])
    # in the session's workspace: the only place a (sandboxed) shell command can write
    workspace = stack.logs.parent / "workspaces" / key.team / key.channel / key.thread_ts
    scenario = Scenario(llm, workspace / f"ran-{index}.log", rng)
    llm.default = scenario.reply
    store = SessionStore(redis, key)
    submit_input(redis, key, UserInput(text=f"run {index}", user="U1", ts=root["ts"]), turn_timeout_s=600)
    _wait_for_point(point, scenario, store, rng)
    worker = next(
        name
        for name, process in stack.processes.items()
        if name.startswith("worker") and process.poll() is None
    )
    stack.kill(worker)
    stack.spawn(f"worker-{index}", [THREADLINE, "worker"])
    state = _settle(store)
    resumed = state in ("interrupted", "cancelled", "failed")
    if resumed:
        resume(redis, key, by="U1", turn_timeout_s=600)
    _wait(lambda: store.meta.read().state == "idle" and _answers(slack, key) >= 1, "the final answer")
    return _check(point, state, store, slack, key, scenario.marker, resumed)


def _wait_for_point(point: str, scenario: Scenario, store: SessionStore, rng: random.Random) -> None:
    where = lambda: _whereabouts(store, scenario)  # noqa: E731 - said only when a wait times out
    if point == "model":
        _wait(scenario.in_model.is_set, "a model call", said=where)
    elif point == "tool":
        _wait(scenario.marker.exists, "the shell tool", said=where)
    elif point == "between":
        _wait(lambda: _has_result(store, "c1"), "the first tool result", said=where)
    else:
        _wait(lambda: any(n.kind == "answer" for _, n in store.notices()), "the answer notice", said=where)
    time.sleep(rng.uniform(0, 0.15))  # a random point inside that phase


def _settle(store: SessionStore) -> str:
    _wait(lambda: store.meta.read().state not in ("running", "queued") or not _lease(store), "the janitor")
    _wait(lambda: store.meta.read().state != "running", "the session to settle")
    return store.meta.read().state


def _lease(store: SessionStore) -> bool:
    return bool(store.redis.exists(store.lease_key))


def _has_result(store: SessionStore, call_id: str) -> bool:
    return any(r.get("event", {}).get("tool_call_id") == call_id and r["event"]["type"] == "tool.result"
               for r in store.read_wire())  # fmt: skip


def _answers(slack: FakeSlack, key: SessionKey) -> int:
    return sum(1 for m in slack.thread(key.channel, key.thread_ts) if m.get("bot_id") and ANSWER in str(m))


def _check(point: str, state: str, store: SessionStore, slack: FakeSlack, key: SessionKey, marker: Path,
           resumed: bool) -> RunResult:  # fmt: skip
    wire = store.read_wire()
    users = collections.Counter(
        r["message"]["content"][0]["text"] for r in wire if r["type"] == "context.append_message"
        and r["message"]["role"] == "user"
    )  # fmt: skip
    results = collections.Counter(
        r["event"]["tool_call_id"] for r in wire if r.get("event", {}).get("type") == "tool.result"
    )
    called = [r["event"]["tool_call_id"] for r in wire if r.get("event", {}).get("type") == "tool.call"]
    ran = collections.Counter(marker.read_text().split()) if marker.exists() else collections.Counter()
    unknown = [n for _, n in store.notices() if n.kind == "unknown_result"]
    return RunResult(
        point=point,
        state_after_kill=state,
        unknown_notices=len(unknown),
        calls_without_result=sum(1 for call in set(called) if results[call] == 0),
        duplicate_user_messages=sum(count - 1 for count in users.values() if count > 1),
        duplicate_results=sum(count - 1 for count in results.values() if count > 1),
        tools_run_twice=sum(count - 1 for count in ran.values() if count > 1),
        answers_in_thread=_answers(slack, key),
        resumed=resumed,
    )


def _wait(check, what: str, timeout: float = DEADLINE_S, said: Callable[[], str] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}" + (f" ({said()})" if said else ""))
        time.sleep(0.02)


def _whereabouts(store: SessionStore, scenario: Scenario) -> str:
    """Where the session stands, for a wait that timed out: its state, the model requests it made,
    whether the shell ran, and the last records of its wire."""
    meta = store.meta.read()
    kinds = [r.get("event", {}).get("type") or r["type"] for r in store.read_wire()[-6:]]
    return (
        f"state {meta.state}, job {meta.job or '-'}, {scenario.requests} model request(s), "
        f"shell ran: {scenario.marker.exists()}, wire ends {kinds}"
    )


def run_chaos(
    runs: int, seed: int, redis_url: str, workdir: Path, points: Sequence[str] | None = None
) -> ChaosReport:
    """`runs` kills at random points, or at `points` in turn when given (what CI uses)."""
    rng = random.Random(seed)
    redis = Redis.from_url(redis_url)
    redis.flushdb()
    slack, llm = FakeSlack(bot_token=BOT_TOKEN).start(), FakeLLM().start()
    env = {"APPROVAL_WAIVED_TOOLS": "shell", "LEASE_TTL_SECONDS": "2", "JANITOR_INTERVAL_SECONDS": "0.5"}
    stack = Stack(workdir, redis_url, slack.api_url, llm.base_url, **env)
    stack.spawn("worker", [THREADLINE, "worker"])
    report = ChaosReport()
    try:
        for index in range(runs):
            point = points[index % len(points)] if points else rng.choice(KILL_POINTS)
            report.runs.append(one_run(index, point, rng, redis, slack, llm, stack))
    finally:
        stack.stop()
        slack.stop()
        llm.stop()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp).chmod(0o711)  # a root run's sandboxed shell (another uid) must reach the workspaces
        report = run_chaos(args.runs, args.seed, args.redis, Path(tmp))
    print("\n".join(report.lines()))


if __name__ == "__main__":
    main()
