"""Time to HTTP 200 for signed `app_mention` events at a fixed rate, threadline vs a bare Bolt app
(issue 7), with its quotas on and off (issue 18).

    python -m bench.gateway [--seconds 20] [--rates 100,200,400] [--rounds 3] [--quotas both|on|off]
    python -m bench.gateway --replica --rates 200   # acknowledging after WAIT for a replica (issue 32)
    python -m bench.gateway --self-check      # only the generator against a trivial ASGI app

First the generator is checked at 1,000 requests/s for 5 s against a trivial ASGI app
(bench.trivial_asgi) that uvicorn (httptools, uvloop) serves in a process of its own, so a slow
figure below is the server's, not the generator's. Then, at each rate, the same open-loop schedule
(bench.open_loop) goes to servers with the same gunicorn setup: the bare Bolt app
(bench.bare_bolt, acknowledges only) and the real `threadline web` (one stack per setting of the
quotas), with Redis and a real `threadline worker` running turns against the fake Slack and a fake
model. Every event is a new thread, so threadline takes its full path (dedupe, quotas, session,
wire append, enqueue). The mentions come from a crowd (`Crowd`): as many people and channels as it
takes for the default quotas to refuse none of them, as in a workspace where each person asks a
few things at once; the warm-up has each person speak once, so their users.info lookup is cached,
as it is for the people of a workspace in use. `threadline` runs with the default quotas, `no
quotas` with every quota of a mention turned off (the mention path without its quota checks); each
on its own Redis database. After each round the turn backlog and the quota counts are thrown away,
so the next starts from an idle worker and people who have not spoken yet. Each app runs
`--rounds` times per rate, alternating with the others, and the table gives medians over the
rounds: on a 2-core machine one run in a few is disturbed by something else, and a single run
would let that decide the comparison.
With `--replica`, the two threadline stacks share a primary of the bench's own that has one
replica: `no WAIT` acknowledges at once, `WAIT 1` after WAIT has seen a replica hold the input
(REDIS_MIN_REPLICAS_ACK=1, the default with Sentinel); the verdict gives their p99s side by side.
Targets: threadline p99 <= 20 ms at 400/s and <= 2x the bare p99 at every rate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from math import ceil
from pathlib import Path
from typing import Any

import httpx
from redis import Redis
from rq.registry import StartedJobRegistry

from bench.events import app_mention
from bench.open_loop import Run, get, post, run_open_loop
from gateway.processes.cpu_priority import lower_priority_to
from gateway.processes.web import EVENTS_PATH, WEB_THREADS
from gateway.sandbox.redis_servers import ReplicatedRedis
from gateway.sandbox.signing import event_request
from gateway.sandbox.stack import (
    BOT_TOKEN,
    READY_TIMEOUT_S,
    SIGNING_SECRET,
    SOURCE_ROOT,
    Stack,
    free_port,
)
from jobs.keys import quota_key, session_key_around, working_sessions_key
from jobs.queues import SLACK_QUEUE, TURNS_QUEUE, queue
from jobs.settings import Settings

HOST = "127.0.0.1"
CHANNELS = 8  # at least "a handful": sessions spread over channels as a real workspace's would
BASE_TS = 1_700_000_000
QUOTAS_OFF = {
    name: "0"
    for name in (
        "QUOTA_MENTIONS_PER_USER_PER_MINUTE",
        "QUOTA_MENTIONS_PER_CHANNEL_PER_MINUTE",
        "QUOTA_BOT_TURNS_PER_THREAD_PER_HOUR",
        "QUOTA_SESSIONS_PER_USER",
    )
}
QUOTAS_OFF_DB = 13  # the `no quotas` stack's Redis database (threadline's is --redis)
NO_WAIT, WAIT_ONE = "no WAIT", "WAIT 1"  # --replica's stacks
# Slack delivers from many hosts over many connections; one per gunicorn thread (2 x 8) spreads
# events over both worker processes, as far as gunicorn's accept race spreads the connections.
CONNECTIONS = 16
SELF_CHECK_RATE = 1_000
SELF_CHECK_SECONDS = 5.0
# Before the clock, at the run's own rate: imports, the one auth.test, gunicorn's threads and
# their Redis connections all come into being on first use, and would show as a first-second spike.
WARM_UP_SECONDS = 1.0
DRAIN_TIMEOUT_S = 60
P99_TARGET_MS = 20.0
P99_TARGET_RATE = 400
RATIO_TARGET = 2.0


# -- the events ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Crowd:
    """Who sends the mentions: mention i comes from person i mod `people` in channel i mod `channels`."""

    people: int = 1
    channels: int = CHANNELS

    @classmethod
    def unrefused(cls, mentions: int, warm_up: int, settings: Settings) -> Crowd:
        """At least `warm_up` people, and enough people and channels that the quotas of `settings`
        refuse none of `mentions` after a warm-up of one per person: a person's sessions all stay
        working (turns queue up at these rates), so each may send QUOTA_SESSIONS_PER_USER in all,
        and no more than their rate a minute."""
        per_person = min(
            limit
            for limit in (settings.QUOTA_MENTIONS_PER_USER_PER_MINUTE, settings.QUOTA_SESSIONS_PER_USER)
            if limit > 0
        )
        people = max(warm_up, ceil(mentions / max(per_person - 1, 1)))
        per_channel = settings.QUOTA_MENTIONS_PER_CHANNEL_PER_MINUTE or mentions + people
        return cls(people, max(CHANNELS, ceil((mentions + people) / per_channel)))

    def person(self, index: int) -> str:
        return f"W{index % self.people:06d}"

    def channel(self, index: int) -> str:
        return f"C{100 + index % self.channels}"


def mention(run: int, index: int, crowd: Crowd) -> dict[str, Any]:
    """A new top-level mention: a distinct ts and event_id, so every one is a new session."""
    ts = f"{BASE_TS + run}.{index:06d}"
    words, event_id = f"bench {run}/{index}", f"Evb{run}x{index}"
    return app_mention(ts, crowd.channel(index), words, event_id, user=crowd.person(index))


def signed_mentions(port: int, run: int, count: int, crowd: Crowd = Crowd()) -> list[bytes]:
    """Raw requests, signed now: a run must start within Slack's 5-minute window (it does)."""
    requests = []
    for index in range(count):
        body, headers = event_request(SIGNING_SECRET, mention(run, index, crowd))
        requests.append(post(HOST, port, EVENTS_PATH, body, headers))
    return requests


def sessions_made(redis: Redis, run: int) -> int:
    """How many of run `run`'s mentions made a session (the rest were refused)."""
    before, after = session_key_around("meta")
    return sum(1 for _ in redis.scan_iter(match=f"{before}*:{BASE_TS + run}.*{after}", count=1000))


def fire(port: int, requests: list[bytes], rate: float, connections: int = 0) -> Run:
    prime = get(HOST, port, "/healthz")
    return asyncio.run(run_open_loop(HOST, port, requests, rate, connections=connections, prime=prime))


# -- the processes ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fakes:
    slack_api_url: str
    llm_base_url: str


@contextmanager
def fakes_process() -> Iterator[Fakes]:
    """The fake Slack and model in a process of their own, so their threads never hold this
    process's GIL while the generator keeps time; in a session of their own at the workers'
    priority, since they stand for services that run elsewhere and must not take the CPU
    from the generator (their autogroup would otherwise be the generator's)."""
    command = [sys.executable, "-m", "bench.gateway", "--serve-fakes"]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert process.stdout is not None
        urls = json.loads(process.stdout.readline())
        yield Fakes(urls["slack"], urls["llm"])
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=10)


def serve_fakes() -> None:
    from agent.testing import FakeLLM
    from gateway.sandbox.fake_slack import FakeSlack

    lower_priority_to(Settings().WORKER_NICENESS)
    slack, llm = FakeSlack(bot_token=BOT_TOKEN).start(), FakeLLM().start()
    print(json.dumps({"slack": slack.api_url, "llm": llm.base_url}), flush=True)
    sys.stdin.read()
    slack.stop()
    llm.stop()


@contextmanager
def trivial_asgi_app() -> Iterator[int]:
    """bench.trivial_asgi under uvicorn, in a process of its own so it never holds the generator's
    GIL; yields its port once it answers, and stops it on the way out."""
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "bench.trivial_asgi:app", "--app-dir", str(SOURCE_ROOT)]
    command += ["--host", HOST, "--port", str(port), "--lifespan", "off"]
    command += ["--http", "httptools", "--loop", "uvloop"]  # named, so the same server is measured
    command += ["--log-level", "warning", "--no-access-log"]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        _wait_until_ok(process, f"http://{HOST}:{port}/")
        yield port
    finally:
        process.terminate()  # uvicorn shuts down gracefully on SIGTERM
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_ok(process: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not _says_ok(url):
        if process.poll() is not None:
            raise RuntimeError(f"the trivial ASGI app exited ({process.returncode}) before answering")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the trivial ASGI app did not answer within {READY_TIMEOUT_S} s")
        time.sleep(0.05)


def _says_ok(url: str) -> bool:
    try:
        response = httpx.get(url, timeout=1)
    except httpx.HTTPError:
        return False
    return response.status_code == 200 and response.content == b"ok"


def start_bare(stack: Stack) -> Stack:
    stack.spawn("web", [sys.executable, "-m", "bench.bare_bolt"])
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not _answers(stack):
        if time.monotonic() > deadline or stack.processes["web"].poll() is not None:
            raise RuntimeError(f"the bare Bolt app did not start:\n{stack.log('web')}")
        time.sleep(0.05)
    return stack


def _answers(stack: Stack) -> bool:
    try:
        return stack.client.get("/healthz").status_code == 200
    except Exception:
        return False


def drain(redis: Redis) -> int:
    """Throw away the turn and delivery backlog and the quota counts, and let running jobs end;
    returns the turn backlog."""
    for pattern in (quota_key("*", "*"), working_sessions_key("*", "*")):
        for key in redis.scan_iter(match=pattern, count=1000):
            redis.delete(key)
    backlog = queue(redis, TURNS_QUEUE).count
    names = (TURNS_QUEUE, SLACK_QUEUE)
    for name in names:
        queue(redis, name).empty()
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while any(StartedJobRegistry(name, connection=redis).count for name in names):
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    return backlog


# -- the run ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rounds:
    """One app's runs at one rate: each figure is the median over the rounds (max for the worst),
    so one run disturbed by something else on the machine does not decide the comparison."""

    runs: list[Run]

    @property
    def sent(self) -> int:
        return sum(run.sent for run in self.runs)

    @property
    def errors(self) -> int:
        return sum(run.errors for run in self.runs)

    @property
    def connections_opened(self) -> int:
        return max(run.connections_opened for run in self.runs)

    def percentile_ms(self, q: float) -> float:
        return statistics.median(run.percentile_ms(q) for run in self.runs)

    def late_percentile_ms(self, q: float) -> float:
        return statistics.median(run.late_percentile_ms(q) for run in self.runs)

    def worst(self) -> tuple[float, float]:
        return max(run.worst() for run in self.runs)

    def each_p99(self) -> str:
        return " / ".join(f"{run.percentile_ms(99):.2f}" for run in self.runs)


@dataclass(frozen=True)
class Pair:
    """One rate: the bare app and each threadline stack (by name), with what each of those left."""

    rate: int
    bare: Rounds
    ours: dict[str, Rounds]
    backlog: dict[str, int]  # turns still queued when the stack's last window ended
    refused: dict[str, int]  # mentions that made no session, over all rounds


@dataclass(frozen=True)
class Ours:
    """A threadline stack of the comparison: its name, Redis database and settings."""

    name: str
    redis_url: str
    env: dict[str, str]


def threadline_stacks(args: argparse.Namespace, replicated: str | None = None) -> list[Ours]:
    if replicated is not None:  # --replica: the same primary, acknowledging after WAIT or not
        return [
            Ours(NO_WAIT, _with_db(replicated, 0), {"REDIS_MIN_REPLICAS_ACK": "0"}),
            Ours(WAIT_ONE, _with_db(replicated, 1), {"REDIS_MIN_REPLICAS_ACK": "1"}),
        ]
    stacks = []
    if args.quotas in ("on", "both"):
        stacks.append(Ours("threadline", args.redis, {}))
    if args.quotas in ("off", "both"):
        stacks.append(Ours("no quotas", _with_db(args.redis, QUOTAS_OFF_DB), QUOTAS_OFF))
    return stacks


def _with_db(url: str, db: int) -> str:
    return f"{url.rsplit('/', 1)[0]}/{db}"


def measure(port: int, run: int, rate: int, seconds: float, connections: int) -> Run:
    """A warm-up in which each person of the crowd speaks once, then `seconds` of mentions."""
    count = int(rate * seconds)
    crowd = Crowd.unrefused(count, int(rate * WARM_UP_SECONDS), Settings())
    fire(port, signed_mentions(port, 10_000 + run, crowd.people, crowd), rate, connections)
    return fire(port, signed_mentions(port, run, count, crowd), rate, connections)


def compare(args: argparse.Namespace) -> list[Pair]:
    with tempfile.TemporaryDirectory() as tmp:
        if not args.replica:
            return _compare(args, threadline_stacks(args), Path(tmp))
        servers = ReplicatedRedis(Path(tmp) / "redis").start()
        try:
            return _compare(args, threadline_stacks(args, servers.primary_url), Path(tmp))
        finally:
            servers.stop()


def _compare(args: argparse.Namespace, ours: list[Ours], tmp: Path) -> list[Pair]:
    redis = {stack.name: Redis.from_url(stack.redis_url) for stack in ours}
    for connection in redis.values():
        connection.flushdb()
    env = {"WEB_CONCURRENCY": str(args.web_workers), "APPROVAL_TOOLS": ""}
    pairs = []
    with fakes_process() as fakes:
        stacks: dict[str, Stack] = {}
        for name, url, extra in [("bare", args.redis, {}), *((o.name, o.redis_url, o.env) for o in ours)]:
            (tmp / name).mkdir()
            fake_urls = (fakes.slack_api_url, fakes.llm_base_url)
            stacks[name] = Stack(tmp / name, url, *fake_urls, **env, **extra)
        try:
            bare = start_bare(stacks["bare"])
            started = {stack.name: stacks[stack.name].start(workers=args.workers) for stack in ours}
            for number, rate in enumerate(args.rates):
                pairs.append(_compare_at(rate, number, args, bare, started, redis))
        finally:
            for stack in stacks.values():
                stack.stop()
    return pairs


def _compare_at(
    rate: int,
    number: int,
    args: argparse.Namespace,
    bare: Stack,
    ours: dict[str, Stack],
    redis: dict[str, Redis],
) -> Pair:
    """Each app `args.rounds` times at `rate`, alternating, so all see the same machine."""
    runs: dict[str, list[Run]] = {name: [] for name in ["bare", *ours]}
    backlog, refused = dict.fromkeys(ours, 0), dict.fromkeys(ours, 0)
    for round_ in range(args.rounds):
        run = (1 + len(ours)) * (number * args.rounds + round_)
        runs["bare"].append(measure(bare.port, run, rate, args.seconds, args.connections))
        for offset, (name, stack) in enumerate(ours.items(), 1):
            runs[name].append(measure(stack.port, run + offset, rate, args.seconds, args.connections))
            refused[name] += runs[name][-1].sent - sessions_made(redis[name], run + offset)
            backlog[name] = drain(redis[name])
    rounds = {name: Rounds(each) for name, each in runs.items()}
    return Pair(rate, rounds.pop("bare"), rounds, backlog, refused)


# -- the report ---------------------------------------------------------------------------------


def self_check(rate: int, seconds: float, connections: int) -> Run:
    with trivial_asgi_app() as port:
        body = json.dumps(mention(0, 0, Crowd())).encode()
        requests = [post(HOST, port, "/", body, {"Content-Type": "application/json"})] * int(rate * seconds)
        return fire(port, requests, rate, connections)


def print_self_check(run: Run, seconds: float) -> None:
    print(
        f"self-check: generator → trivial ASGI app (uvicorn, httptools, uvloop), {run.rate:.0f} req/s "
        f"for {seconds:g} s: "
        f"p50 {run.percentile_ms(50):.2f} ms, p99 {run.percentile_ms(99):.2f} ms, "
        f"errors {run.errors}/{run.sent}; sent late p99 {run.late_percentile_ms(99):.2f} ms"
    )


HEADER = (
    f"{'rate/s':>6}  {'app':<10} {'sent':>6} {'refused':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
    f"{'max at':>6} {'errors':>6} {'late p99':>8} {'conns':>5}  p99 ratio"
)
LEGEND = (
    "max at: seconds into the run the slowest request was due; late p99: scheduled time -> request "
    "written (the generator's lag, plus\nconnecting and, past 2,000 connections, waiting for one); "
    "conns: connections opened (grows when the server falls behind);\nerrors: non-200 answers + "
    "connection errors + no answer within 10 s; refused: mentions that made no session (a quota's)"
)


def print_table(pairs: list[Pair], args: argparse.Namespace) -> None:
    print(
        f"\n{args.rounds} round(s) of {args.seconds:g} s per app and rate, alternating (p50, p99 and "
        "late p99: median over the rounds; max: the worst of all; sent, errors: summed)"
        f"\ngunicorn gthread, {args.web_workers} workers x {WEB_THREADS} "
        f"threads; {args.workers} worker process(es) per stack; latency from the scheduled send time"
    )
    for rate in args.rates:
        crowd = Crowd.unrefused(int(rate * args.seconds), int(rate * WARM_UP_SECONDS), Settings())
        print(f"at {rate}/s: {crowd.people} people in {crowd.channels} channels")
    print(HEADER)
    for pair in pairs:
        print(_row(pair.rate, "bare", pair.bare, "-"))
        for name, rounds in pair.ours.items():
            ratio = rounds.percentile_ms(99) / pair.bare.percentile_ms(99)
            print(_row(pair.rate, name, rounds, str(pair.refused[name])) + f"  {ratio:.2f}x")
    print(LEGEND)
    print_rounds(pairs)
    print_verdict(pairs)


def _row(rate: int, name: str, run: Rounds, refused: str) -> str:
    worst_ms, worst_at = run.worst()
    return (
        f"{rate:>6}  {name:<10} {run.sent:>6} {refused:>7} {run.percentile_ms(50):>8.2f} "
        f"{run.percentile_ms(99):>8.2f} "
        f"{worst_ms:>8.2f} {worst_at:>6.1f} {run.errors:>6} {run.late_percentile_ms(99):>8.2f} "
        f"{run.connections_opened:>5}"
    )


def print_rounds(pairs: list[Pair]) -> None:
    if len(pairs[0].bare.runs) > 1:
        print("p99 of each round (ms):")
        for pair in pairs:
            ours = ";  ".join(f"{name} {rounds.each_p99()}" for name, rounds in pair.ours.items())
            print(f"  {pair.rate}/s  bare {pair.bare.each_p99()};  {ours}")


def print_verdict(pairs: list[Pair]) -> None:
    for pair in pairs:
        for name, backlog in pair.backlog.items():
            print(f"turns still queued when {name}'s {pair.rate}/s window ended: {backlog} (discarded)")
    for pair in pairs:
        for name, rounds in pair.ours.items():
            ours, ratio = rounds.percentile_ms(99), rounds.percentile_ms(99) / pair.bare.percentile_ms(99)
            checks = [f"p99/bare p99 {ratio:.2f}x {_than(ratio, RATIO_TARGET)} {RATIO_TARGET:g}x"]
            if pair.rate == P99_TARGET_RATE:
                checks.append(f"p99 {ours:.2f} ms {_than(ours, P99_TARGET_MS)} {P99_TARGET_MS:g} ms")
            met = ratio <= RATIO_TARGET and (pair.rate != P99_TARGET_RATE or ours <= P99_TARGET_MS)
            print(f"{pair.rate}/s {name}: {'met' if met else 'MISSED'} ({'; '.join(checks)})")
        if {"threadline", "no quotas"} <= pair.ours.keys():
            on, off = pair.ours["threadline"].percentile_ms(99), pair.ours["no quotas"].percentile_ms(99)
            print(f"{pair.rate}/s quotas on vs off: p99 {on:.2f} vs {off:.2f} ms ({on / off:.2f}x)")
        if {NO_WAIT, WAIT_ONE} <= pair.ours.keys():
            waited, alone = pair.ours[WAIT_ONE].percentile_ms(99), pair.ours[NO_WAIT].percentile_ms(99)
            print(f"{pair.rate}/s WAIT for 1 replica vs none: p99 {waited:.2f} vs {alone:.2f} ms "
                  f"({waited / alone:.2f}x)")  # fmt: skip


def _than(figure: float, target: float) -> str:
    return "<=" if figure <= target else ">"


def _rates(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rates", type=_rates, default=[100, 200, 400])
    parser.add_argument("--rounds", type=int, default=3, help="runs per app and rate; figures are medians")
    parser.add_argument("--workers", type=int, default=1, help="`threadline worker` processes")
    parser.add_argument("--web-workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))
    parser.add_argument(
        "--connections",
        type=int,
        default=CONNECTIONS,
        help="keep-alive connections opened (and primed) ahead",
    )
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    parser.add_argument(
        "--quotas",
        choices=("both", "on", "off"),
        default="both",
        help=f"threadline with the default quotas, with none (on Redis database {QUOTAS_OFF_DB}), or both",
    )
    parser.add_argument(
        "--replica",
        action="store_true",
        help="instead of --quotas: threadline acknowledging without WAIT and after WAIT for 1 replica,"
        " on a primary of the bench's own with one replica (append-only, as production runs)",
    )
    parser.add_argument("--self-check", action="store_true", help="only check the generator")
    parser.add_argument("--self-check-seconds", type=float, default=SELF_CHECK_SECONDS)
    parser.add_argument("--serve-fakes", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fakes:
        return serve_fakes()
    print_self_check(
        self_check(SELF_CHECK_RATE, args.self_check_seconds, args.connections), args.self_check_seconds
    )
    if not args.self_check:
        print_table(compare(args), args)


if __name__ == "__main__":
    main()
