"""Turn dispatch latency, throughput and Redis bytes per turn (issue 6).

    python -m bench.turns [--sessions 50] [--redis redis://127.0.0.1:6379/14]

Runs real `threadline worker` processes (2 per run) against real Redis and a fake model that
answers at once, on the worker's one class (`SimpleWorker`, gateway/processes/concurrent_worker.py):

- dispatch latency: from submitting a person's message to the model's first request;
- turns per second: N sessions submitted together, until every one has its answer;
- Redis bytes written per turn (INFO total_net_input_bytes) on a session that already has
  10 and 1,000 turns behind it.

    python -m bench.turns --progress [--redis …]

measures only the progress card's cost (issue 18): a turn of 10, 100 and 500 tool steps and its
delivery, in-process; the Redis bytes the session holds after it (MEMORY USAGE of its keys, the
outbox apart) and the bytes Redis received.

    python -m bench.turns --metrics [--rounds 2] [--sessions 50] [--redis …]

(the README's figures: --rounds 4 --sessions 200; shorter bursts scatter by ±10 %)

measures what Prometheus metrics and correlated logging cost (issue 21): dispatch latency and
turns per second on SimpleWorker with both off (METRICS_PORT unset: values in process memory,
never read; LOG_LEVEL=WARNING: hardly a line written) and on (METRICS_PORT set: multiprocess
files, scraped every second during the run; LOG_FORMAT=json at INFO: every line a JSON object
with its thread, turn and job), alternating in the
same run so both see the same machine, and the overhead in per cent; the worker processes' CPU
per turn (from /proc, hardly moved by other work on a shared machine); and the CPU one turn's
metric updates take, timed alone in memory and in multiprocess files, and its log lines, timed
alone at WARNING and at INFO in JSON. The timed-alone figures are what the product itself adds;
the end-to-end ones also carry the machine's scatter between rounds, often larger.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from redis import Redis

from agent.messages import assistant_message, user_message
from agent.testing import FakeLLM, Reply, calls, text
from agent.tools.sandbox import descendants
from agent.wire import AppendLoopEvent, AppendMessage, ContentPartEvent, StepBegin, StepEnd, TurnEnded
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import BOT_TOKEN, THREADLINE, Stack, free_port
from jobs.control import submit_input
from jobs.keys import SessionKey
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput

POLL_S = 0.001
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # the unit of /proc/<pid>/stat's CPU times
SCRAPE_EVERY_S = 1.0  # far more often than Prometheus' usual 15-60 s: an upper bound on its cost
INFO_COMMAND_BYTES = len(b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n")
WORKERS = 2
PROGRESS_STEPS = (10, 100, 500)


class Clock:
    """Records when the fake model first hears of each session (same process, same clock)."""

    def __init__(self) -> None:
        self.first_request: dict[str, float] = {}

    def reply(self, body: dict) -> Reply:
        marker = str(body["messages"][-1].get("content", ""))
        self.first_request.setdefault(marker, time.perf_counter())
        return text("done")


def start_workers(
    tmp: Path,
    redis_url: str,
    slack: FakeSlack,
    llm: FakeLLM,
    worker_class: str,
    metrics_ports: list[int] | None = None,
    **env: str,
) -> Stack:
    """WORKERS supervisors, as on WORKERS machines: each serves its own METRICS_PORT (one port
    shared would leave a single supervisor running, the others refused at start)."""
    stack = Stack(tmp, redis_url, slack.api_url, llm.base_url, THREADLINE_WORKER_CLASS=worker_class, **env)
    for index in range(WORKERS):
        own = {"METRICS_PORT": str(metrics_ports[index])} if metrics_ports else {}
        stack.spawn(f"worker{index}", [THREADLINE, "worker"], **own)
    return stack


def require_running(stack: Stack) -> None:
    """A figure measured with a worker gone measures fewer workers: refuse it."""
    for name, process in stack.processes.items():
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited during the run:\n{stack.log(name)[-2000:]}")


def session(slack: FakeSlack, index: int, tag: str) -> tuple[SessionKey, UserInput]:
    root = slack.add_user_message("C1", f"{tag} {index}", user="U1")
    key = SessionKey(team="T1", channel="C1", thread_ts=root["ts"])
    return key, UserInput(text=f"{tag} {index}", user="U1", ts=root["ts"])


def wait_idle(redis: Redis, keys: list[SessionKey], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    pending = set(keys)
    while pending:
        pending = {k for k in pending if SessionStore(redis, k).meta.read().last_turn_reason != "completed"}
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(pending)} turns did not finish")
        time.sleep(0.005)


DISPATCH_DEADLINE_S = 60.0  # a mention that has not reached the model by then is lost, not slow


def dispatch_latency(redis: Redis, slack: FakeSlack, clock: Clock, tag: str, runs: int = 30) -> list[float]:
    latencies = []
    for index in range(runs + 3):
        key, user_input = session(slack, index, tag)
        started = time.perf_counter()
        submit_input(redis, key, user_input, turn_timeout_s=600)
        marker = f"<@U1>: {tag} {index}"
        deadline = time.monotonic() + DISPATCH_DEADLINE_S
        while marker not in clock.first_request:
            if time.monotonic() > deadline:
                raise RuntimeError(f"turn {index} never asked the model")
            time.sleep(POLL_S)
        wait_idle(redis, [key])
        if index >= 3:  # the first few warm the workers up
            latencies.append((clock.first_request[marker] - started) * 1000)
    return latencies


def throughput(redis: Redis, slack: FakeSlack, tag: str, sessions: int) -> float:
    pairs = [session(slack, index, tag) for index in range(sessions)]
    started = time.perf_counter()
    for key, user_input in pairs:
        submit_input(redis, key, user_input, turn_timeout_s=600)
    wait_idle(redis, [key for key, _ in pairs])
    return sessions / (time.perf_counter() - started)


def seed_turns(store: SessionStore, turns: int) -> None:
    pipe_records = []
    for n in range(turns):
        step = f"seed-{n}"
        pipe_records += [
            AppendMessage(message=user_message(f"old question {n}")),
            AppendLoopEvent(event=StepBegin(uuid=step)),
            AppendLoopEvent(
                event=ContentPartEvent(step_uuid=step, part=assistant_message(f"old answer {n}").content[0])
            ),
            AppendLoopEvent(event=StepEnd(uuid=step, finish_reason="stop")),
            TurnEnded(turn_id=step, reason="completed"),
        ]
    for record in pipe_records:
        store.append(record)


def bytes_per_turn(
    redis: Redis, slack: FakeSlack, llm: FakeLLM, previous_turns: int, samples: int = 5
) -> float:
    """Bytes Redis received for one turn and its delivery, run in this process with no workers up,
    so nothing else is counted (INFO total_net_input_bytes counts every client)."""
    settings = {"REDIS_URL": _url(redis), "LLM_BASE_URL": llm.base_url, "LLM_MODEL": "fake"}
    os.environ.update(settings, SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_API_URL=slack.api_url, APPROVAL_TOOLS="")
    import gateway.delivery.job
    import jobs.turn.runner
    from jobs import runtime

    runtime.settings.cache_clear()
    runtime.redis_client.cache_clear()

    key, _ = session(slack, previous_turns, "bytes")
    seed_turns(SessionStore(redis, key), previous_turns)
    measured = []
    for sample in range(samples):
        ts = slack.add_user_message("C1", "next", user="U1", thread_ts=key.thread_ts)["ts"]
        before = int(redis.info("stats")["total_net_input_bytes"])
        submit_input(redis, key, UserInput(text=f"next {sample}", user="U1", ts=ts), turn_timeout_s=600)
        jobs.turn.runner.run_turn(str(key))
        gateway.delivery.job.deliver(str(key))
        measured.append(int(redis.info("stats")["total_net_input_bytes"]) - before - INFO_COMMAND_BYTES)
    return statistics.median(measured)


def progress_bytes(redis: Redis, slack: FakeSlack, steps: int) -> dict[str, int]:
    """One turn of `steps` tool calls and its delivery, in-process: bytes held and received."""
    llm = FakeLLM().start()
    llm.script(*(calls((f"c{i}", "glob", {"pattern": f"step{i}-*"})) for i in range(steps)), text("done"))
    try:
        _in_process(redis, slack, llm)
        import gateway.delivery.job
        import jobs.turn.runner

        key, user_input = session(slack, steps, "progress")
        before = int(redis.info("stats")["total_net_input_bytes"])
        submit_input(redis, key, user_input, turn_timeout_s=600)
        jobs.turn.runner.run_turn(str(key))
        gateway.delivery.job.deliver(str(key))
        received = int(redis.info("stats")["total_net_input_bytes"]) - before - INFO_COMMAND_BYTES
    finally:
        llm.stop()
    store = SessionStore(redis, key)
    held = sum(redis.memory_usage(name) or 0 for name in redis.scan_iter(match=key.redis_key("*")))
    return {"held": held, "outbox": redis.memory_usage(store.outbox_key) or 0, "received": received}


def _in_process(redis: Redis, slack: FakeSlack, llm: FakeLLM) -> None:
    settings = {"REDIS_URL": _url(redis), "LLM_BASE_URL": llm.base_url, "LLM_MODEL": "fake"}
    os.environ.update(settings, SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_API_URL=slack.api_url, APPROVAL_TOOLS="")
    os.environ.setdefault("AGENT_WORKDIR", tempfile.mkdtemp(prefix="bench-progress-"))
    os.environ["MAX_STEPS_PER_TURN"] = str(PROGRESS_STEPS[-1] + 1)
    from jobs import runtime

    runtime.settings.cache_clear()
    runtime.redis_client.cache_clear()


def progress_main(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    redis.flushdb()
    slack = FakeSlack(bot_token=BOT_TOKEN).start()
    try:
        print(f"{'tool steps':>10}{'session bytes held':>20}{'outbox bytes':>14}{'bytes received':>16}")
        for steps in PROGRESS_STEPS:
            got = progress_bytes(redis, slack, steps)
            print(f"{steps:>10}{got['held']:>20,}{got['outbox']:>14,}{got['received']:>16,}")
    finally:
        slack.stop()


def _url(redis: Redis) -> str:
    kwargs = redis.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"


def run_class(worker_class: str, redis_url: str, sessions: int) -> dict[str, object]:
    redis = Redis.from_url(redis_url)
    redis.flushdb()
    clock = Clock()
    slack, llm = FakeSlack(bot_token=BOT_TOKEN).start(), FakeLLM(default=clock.reply).start()
    with tempfile.TemporaryDirectory() as tmp:
        stack = start_workers(Path(tmp), redis_url, slack, llm, worker_class)
        try:
            latencies = dispatch_latency(redis, slack, clock, f"lat-{worker_class}")
            rate = throughput(redis, slack, f"tp-{worker_class}", sessions)
            require_running(stack)
        finally:
            stack.stop()
        written = {turns: bytes_per_turn(redis, slack, llm, turns) for turns in (10, 1000)}
        slack.stop()
        llm.stop()
    return {"latencies": latencies, "rate": rate, "bytes": written}


class Scraper:
    """Scrapes each supervisor's metrics every SCRAPE_EVERY_S while a run goes on, as Prometheus would."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.stop = threading.Event()
        self.scrapes = dict.fromkeys(urls, 0)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(SCRAPE_EVERY_S):
            for url in self.urls:
                with contextlib.suppress(httpx.HTTPError):
                    httpx.get(url, timeout=5).raise_for_status()
                    self.scrapes[url] += 1

    def __enter__(self) -> Scraper:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()


def workers_cpu_s(stack: Stack) -> float:
    """CPU seconds (user + system) the stack's processes and every process below them used so far:
    unlike wall-clock figures, hardly moved by other work on a shared machine."""
    total = 0.0
    for process in stack.processes.values():
        for pid in [process.pid, *descendants(process.pid)]:
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return total


def run_metrics_mode(metrics_on: bool, redis_url: str, sessions: int, tag: str) -> dict[str, float]:
    redis = Redis.from_url(redis_url)
    redis.flushdb()
    clock = Clock()
    slack, llm = FakeSlack(bot_token=BOT_TOKEN).start(), FakeLLM(default=clock.reply).start()
    ports = [free_port() for _ in range(WORKERS)] if metrics_on else None
    quiet = {"LOG_LEVEL": "WARNING"}
    observed = {"LOG_FORMAT": "json", "LOG_LEVEL": "INFO"}
    env = observed if metrics_on else quiet
    scraper = Scraper([f"http://127.0.0.1:{port}/metrics" for port in ports]) if ports else None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            stack = start_workers(Path(tmp), redis_url, slack, llm, "simple", ports, **env)
            try:
                with scraper or contextlib.nullcontext():
                    latencies = dispatch_latency(redis, slack, clock, f"lat-{tag}")
                    cpu_before = workers_cpu_s(stack)
                    rate = throughput(redis, slack, f"tp-{tag}", sessions)
                    cpu_ms = (workers_cpu_s(stack) - cpu_before) * 1000 / sessions
                require_running(stack)
            finally:
                stack.stop()
    finally:
        slack.stop()
        llm.stop()
    if scraper is not None and 0 in scraper.scrapes.values():
        raise RuntimeError(f"metrics on, yet a supervisor's METRICS_PORT never answered: {scraper.scrapes}")
    return {"dispatch": statistics.median(latencies), "rate": rate, "cpu": cpu_ms}


# The end of each probe: one turn to warm up, then argv[1] turns timed: a turn's CPU in µs.
TIMED_TURNS = """
one_turn()
turns, started = int(sys.argv[1]), time.process_time()
for _ in range(turns):
    one_turn()
print((time.process_time() - started) / turns * 1e6)
"""

RECORDING_PROBE = (
    """
import sys, time
from jobs import metrics
def one_turn():  # what a one-step turn of this benchmark records, and its delivery's Slack calls
    metrics.turn_started()
    metrics.MODEL_SECONDS.labels("ok").observe(0.01)
    metrics.MODEL_FIRST_TOKEN.observe(0.005)
    metrics.MODEL_TOKENS.labels("input").inc(10)
    metrics.MODEL_TOKENS.labels("output").inc(5)
    metrics.turn_finished("completed", 0.02, 1)
    for method in ("reactions.add", "chat.postMessage", "chat.update", "chat.postMessage", "reactions.add"):
        metrics.slack_called(method, None)
"""
    + TIMED_TURNS
)


def recording_cost_us(multiprocess: bool, turns: int = 20_000) -> float:
    """Microseconds of CPU one turn's metric updates take, in memory or in multiprocess files."""
    with tempfile.TemporaryDirectory() as directory:
        env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
        if multiprocess:
            env["PROMETHEUS_MULTIPROC_DIR"] = directory
        command = [sys.executable, "-c", RECORDING_PROBE, str(turns)]
        return float(subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout)


LOGGING_PROBE = (
    """
import logging, os, sys, time
from gateway.processes.logs import RQ_WORKER_LOGGER, configure_logging
from jobs.log_context import bound
from jobs.settings import Settings
configure_logging(Settings(LOG_LEVEL=sys.argv[2], LOG_FORMAT="json"))
logging.getLogger().handlers[0].setStream(open(os.devnull, "w"))
rq, worker, ws, httpx, poster = (logging.getLogger(name) for name in (RQ_WORKER_LOGGER,
    "gateway.processes.concurrent_worker", "jobs.turn.workspace", "httpx", "gateway.delivery.poster"))
def one_turn():  # the lines a one-step turn of this benchmark writes at INFO, and RQ's (below WARNING)
    with bound(team="T1", channel="C1", thread="T1:C1:1796478560.000001", turn="turn-fb50d5ab6c01.f859a9",
               job="turn-fb50d5ab6c01"):
        worker.info("worker %s took %s from %s", "b739e263", "jobs.turn.runner.run_turn", "turns")
        rq.info("Worker %s: %s: %s (%s)", "b739e263", "turns", "run_turn('T1:C1:1796478560.1')", "turn-1")
        ws.info("handed %s over to uid %s for the shell sandbox", "/tmp/w/T1/C1/1796478560.000001", 65534)
        httpx.info('HTTP Request: %s %s "%s %d %s"', "POST", "http://127.0.0.1:9/v1/chat/completions",
                   "HTTP/1.1", 200, "OK")
        poster.info("posted %s in %s as %s", "live:turn-1:1:0", "T1:C1:1796478560.1", "1796478560.2")
        for _ in range(4):  # the turn's job and its delivery jobs, finished
            rq.info("Worker %s: %s: %s (%s)", "b739e263", "slack", "Job OK", "j")
            rq.info("Successfully completed %s job in %ss on worker %s", "deliver('T1')", "0:00:00.01", "w")
"""
    + TIMED_TURNS
)


def logging_cost_us(level: str, turns: int = 5_000) -> float:
    """Microseconds of CPU one turn's log lines take at `level`, formatted as JSON (to /dev/null)."""
    command = [sys.executable, "-c", LOGGING_PROBE, str(turns), level]
    return float(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


# (label, field, lower is better): per-run figures the comparison shows.
FIGURES = (
    ("dispatch median (ms)", "dispatch", True),
    ("turns per second", "rate", False),
    ("worker CPU per turn (ms)", "cpu", True),
)


def metrics_main(redis_url: str, sessions: int, rounds: int) -> None:
    runs: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    for round_ in range(rounds):
        for mode in ("off", "on"):
            runs[mode].append(run_metrics_mode(mode == "on", redis_url, sessions, f"{mode}{round_}"))
    print(f"{WORKERS} SimpleWorker processes; {rounds} rounds of off/on alternating; {sessions} sessions")
    print("median of the rounds, then the best round (the one other work on the machine disturbed least)")
    print("off: no metrics served, LOG_LEVEL=WARNING; on: METRICS_PORT scraped each second, JSON logs")
    print(f"{'':36}{'off':>14}{'on':>14}{'overhead':>10}")
    for summary in ("median", "best"):
        for label, field, lower_is_better in FIGURES:
            off, on = (_summarised([r[field] for r in runs[m]], summary, lower_is_better)
                       for m in ("off", "on"))  # fmt: skip
            overhead = (on - off) / off * 100 if lower_is_better else (off - on) / off * 100
            print(f"{f'{label}, {summary}':36}{off:>14.1f}{on:>14.1f}{overhead:>9.1f}%")
    best_cpu_ms = min(r["cpu"] for r in runs["on"])
    modes = (("in memory (METRICS_PORT unset)", False), ("in files (METRICS_PORT set)", True))
    for mode, multiprocess in modes:
        cost = statistics.median(recording_cost_us(multiprocess) for _ in range(3))
        share = cost / 1000 / best_cpu_ms * 100
        print(f"one turn's metric updates {mode}: {cost:.1f} µs of CPU, {share:.2f} % of a turn's best")
    for level in ("WARNING", "INFO"):
        cost = statistics.median(logging_cost_us(level) for _ in range(3))
        share = cost / 1000 / best_cpu_ms * 100
        print(
            f"one turn's log lines at {level}, in JSON: {cost:.1f} µs of CPU, {share:.2f} % of a turn's best"
        )
    for mode in ("off", "on"):
        shown = ", ".join(f"{r['dispatch']:.1f} ms, {r['rate']:.1f} t/s, {r['cpu']:.1f} CPU ms"
                          for r in runs[mode])  # fmt: skip
        print(f"  each round, metrics {mode}: {shown}")


def _summarised(values: list[float], summary: str, lower_is_better: bool) -> float:
    if summary == "median":
        return statistics.median(values)
    return min(values) if lower_is_better else max(values)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    parser.add_argument("--progress", action="store_true", help="only the progress card's bytes")
    parser.add_argument("--metrics", action="store_true", help="only what Prometheus metrics cost")
    parser.add_argument("--rounds", type=int, default=2, help="--metrics: off/on pairs to run")
    args = parser.parse_args()
    if args.progress:
        progress_main(args.redis)
        return
    if args.metrics:
        metrics_main(args.redis, args.sessions, args.rounds)
        return
    result = run_class("simple", args.redis, args.sessions)
    print(f"{WORKERS} worker processes, model answers at once; {args.sessions} sessions for throughput")
    print("bytes: one turn plus its delivery, in-process, median of 5")
    for label, pick in [
        ("dispatch latency median (ms)", lambda r: statistics.median(r["latencies"])),
        ("dispatch latency p90 (ms)", lambda r: statistics.quantiles(r["latencies"], n=10)[-1]),
        ("turns per second", lambda r: r["rate"]),
        ("Redis bytes written, turn after 10", lambda r: r["bytes"][10]),
        ("Redis bytes written, turn after 1,000", lambda r: r["bytes"][1000]),
    ]:
        print(f"{label:38}{pick(result):>12.1f}")


if __name__ == "__main__":
    main()
