"""How fast a `threadline worker` comes up and goes down: what every deploy, restart and
end-to-end test pays.

    python -m bench.worker_start [--rounds 5] [--against DIR] [--redis redis://127.0.0.1:6379/13]

Starts `threadline worker` (its default: one delivery and one turn worker) against real Redis,
waits until both workers have logged that they started, sends SIGTERM, and waits for the
supervisor to exit. Reports the median time to ready and the CPU time the whole process tree
spent from start to exit (the supervisor's rusage, which holds its reaped children's). With
`--against DIR`, the same for the checkout at DIR (its own `.venv/bin/threadline`), in
alternating rounds of the same run: the named baseline.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.threads import wait_until
from gateway.sandbox.stack import BOT_TOKEN, SIGNING_SECRET, THREADLINE

READY_LINES = ("delivery worker started", "turns worker started")
TIMEOUT_S = 60.0


@dataclass
class Round:
    ready_s: float
    cpu_s: float


def one_round(threadline: str, redis_url: str, workdir: Path) -> Round:
    log_path = workdir / "worker.log"
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": "http://127.0.0.1:9/api/",  # never called while starting
        "REDIS_URL": redis_url,
        "LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "LLM_MODEL": "none",
        "AGENT_WORKDIR": str(workdir / "workspaces"),
    }
    env.pop("PYTHONPATH", None)  # each checkout runs its own code
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen([threadline, "worker"], env=env, stdout=log, stderr=subprocess.STDOUT)
    if not wait_until(lambda: all(line in log_path.read_text() for line in READY_LINES), TIMEOUT_S, "ready"):
        process.kill()
        raise SystemExit(f"{threadline} worker did not start:\n{log_path.read_text()[-2000:]}")
    ready_s = time.monotonic() - started
    process.send_signal(signal.SIGTERM)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return Round(ready_s, usage.ru_utime + usage.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout, with its own .venv")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/13")
    args = parser.parse_args()
    commands = {"this checkout": THREADLINE}
    if args.against is not None:
        commands[f"{args.against}"] = str(args.against / ".venv" / "bin" / "threadline")
    results: dict[str, list[Round]] = {name: [] for name in commands}
    for _ in range(args.rounds):
        for name, threadline in commands.items():
            with tempfile.TemporaryDirectory() as workdir:
                results[name].append(one_round(threadline, args.redis, Path(workdir)))
    print(f"threadline worker (1 delivery + 1 turn worker), {args.rounds} rounds, medians")
    print(f"{'':34}{'ready (s)':>12}{'CPU, start to exit (s)':>26}")
    for name, rounds in results.items():
        ready = statistics.median(r.ready_s for r in rounds)
        cpu = statistics.median(r.cpu_s for r in rounds)
        print(f"{name[-34:]:34}{ready:>12.2f}{cpu:>26.2f}")


if __name__ == "__main__":
    main()
