"""Many turns in one worker process (issue 19): 200 mentions within 2 s, one `threadline worker`.

    python -m bench.concurrency [--sessions 200] [--model-s 5] [--turn-concurrency 200] [--heavy 10]
                                [--tool-steps 3] [--source PATH]

Each mention is a new thread by a different person in a channel of its own; the fake model
answers every request after `--model-s` seconds. One `threadline worker` (the default one
delivery and one turn worker) runs with `--turn-concurrency`. Reports when each answer was
posted after its mention (target: all within model time + 3 s), the worker tree's memory per
turn in flight ((peak RSS - idle RSS) / sessions; target <= 2 MB), and the longest gap between
two renewals of any turn's lease, sampled from Redis every 250 ms (target < LEASE_TTL_SECONDS / 3).
Leases are renewed every LEASE_TTL_SECONDS / 4 (5 s), so that is the gap of a heartbeat on time.
With `--heavy N`, the first N turns first `grep` a workspace of 40 MB of text (CPU-bound work in
the worker process while the others wait on the model), to show it does not delay the others'
heartbeats. With `--tool-steps N`, each turn runs `list_dir` N times before it answers, so cards,
live steps and tool results flow while the others wait. The turns share one event loop; the
worker logs its longest stall as it stops, with the CPU time the loop's thread ran (reported
per turn and per model request: what answers arriving together queue up on the loop). Where
the time beyond the model's goes is split in two: from the mention to the turn's first model
request (the fake model notes when each arrives), and from the model's last answer to the
answer in the thread. Leases the worker logged as lost are counted: nothing takes one in this
run, so any is a false alarm. With `--source PATH` (a worktree of a base commit), web and the
worker run from that checkout while this bench, its fakes and its measures stay this
checkout's: a before-and-after in one harness.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from redis import Redis
from rq import Worker

from agent.testing import FakeLLM, Reply, calls, text
from agent.tools.sandbox import descendants
from bench.events import app_mention
from bench.threads import answer_times, wait_until
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.stack import BOT_TOKEN, SOURCE_ROOT, THREADLINE, Stack
from jobs.keys import SessionKey, lease_key
from jobs.settings import Settings

ANSWER = "all done"
SEND_THREADS = 32
SAMPLE_S = 0.05
# The sampler must not load what it measures: the worker tree is listed (a walk of /proc) and the
# leases read (a PTTL per session) this often, not every SAMPLE_S; and the answers, which the
# fake Slack times itself, are looked for at this pace (each look holds the fake's lock).
LIST_TREE_S, LEASES_S, ANSWERS_POLL_S = 1.0, 0.25, 1.0


HEAVY_FILES, HEAVY_FILE_BYTES = 40, 1_000_000


def model(delay_s: float, tool_steps: int = 0, asked: dict[str, list[float]] | None = None):  # type: ignore[no-untyped-def]
    """The fake model's answers; `asked` gets, per "job N", when each of its requests arrived."""

    def reply(body: dict) -> Reply:
        heavy = "[heavy]" in str(body["messages"])
        results = sum(m["role"] == "tool" for m in body["messages"])
        job = re.search(r"job \d+", str(body["messages"]))
        if asked is not None and job:
            asked.setdefault(job.group(), []).append(time.time())
        if heavy and not results:
            return calls(("g1", "grep", {"pattern": "no such needle", "path": "."}))
        if results < tool_steps:  # tool events flow: cards, live steps, tool results
            return calls((f"l{results}", "list_dir", {"path": "."}))
        answer = text(ANSWER)
        answer.delay_s = 0 if heavy else delay_s
        return answer

    return reply


def fill_workspace(workdir: Path, key: SessionKey) -> None:
    """A workspace of HEAVY_FILES text files for a `grep` to read through, line by line."""
    workspace = workdir / key.team / key.channel / key.thread_ts
    workspace.mkdir(parents=True)
    line = "the quick brown fox jumps over the lazy dog 0123456789\n"
    body = line * (HEAVY_FILE_BYTES // len(line))
    for index in range(HEAVY_FILES):
        (workspace / f"notes{index}.txt").write_text(body)


def workers_ready(stack: Stack, redis: Redis) -> bool:
    """Each worker says it started once its imports are done; RQ registers it after that."""
    return stack.log("worker").count(" worker started (pid ") == 2 and Worker.count(connection=redis) == 2


def rss_bytes(root: int) -> int:
    """Resident memory of `root` and every process below it."""
    return sum(map(rss_of, [root, *descendants(root)]))


def rss_of(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    kib = next((line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")), "0")
    return int(kib) * 1024


class Sampler(threading.Thread):
    """Peak RSS of the worker tree, and the longest time any lease went unrenewed."""

    def __init__(self, redis: Redis, worker_pid: int, keys: list[SessionKey], ttl_ms: int) -> None:
        super().__init__(daemon=True)
        self.redis, self.worker_pid, self.ttl_ms = redis, worker_pid, ttl_ms
        self.lease_keys = [lease_key(key) for key in keys]
        self.peak_rss = 0
        self.longest_gap_ms = 0
        self.stop = threading.Event()

    def run(self) -> None:
        tree: list[int] = []
        listed_at = leases_at = 0.0
        while not self.stop.wait(SAMPLE_S):
            now = time.monotonic()
            if now - listed_at >= LIST_TREE_S:
                tree, listed_at = [self.worker_pid, *descendants(self.worker_pid)], now
            self.peak_rss = max(self.peak_rss, sum(map(rss_of, tree)))
            if now - leases_at < LEASES_S:
                continue
            leases_at = now
            with self.redis.pipeline(transaction=False) as pipe:
                for key in self.lease_keys:
                    pipe.pttl(key)
                left = [ms for ms in pipe.execute() if ms > 0]
            if left:  # time since the last renewal = TTL - what is left of it
                self.longest_gap_ms = max(self.longest_gap_ms, self.ttl_ms - min(left))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--model-s", type=float, default=5)
    parser.add_argument("--turn-concurrency", type=int, default=200)
    parser.add_argument("--heavy", type=int, default=0, help="turns that grep 40 MB first")
    parser.add_argument(
        "--tool-steps", type=int, default=0, help="list_dir steps each turn runs before answering"
    )
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    parser.add_argument(
        "--source",
        type=Path,
        default=SOURCE_ROOT,
        help="checkout whose web and worker run (a base commit's worktree), measured by this bench",
    )
    args = parser.parse_args()
    redis = Redis.from_url(args.redis)
    redis.flushdb()
    slack = FakeSlack(bot_token=BOT_TOKEN).start()
    asked: dict[str, list[float]] = {}
    llm = FakeLLM(default=model(args.model_s, args.tool_steps, asked)).start()
    ttl_ms = int(Settings().LEASE_TTL_SECONDS * 1000)
    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(
            Path(tmp), args.redis, slack.api_url, llm.base_url, source_root=args.source, APPROVAL_TOOLS=""
        ).start(workers=0)
        worker = stack.spawn(
            "worker", [THREADLINE, "worker", "--turn-concurrency", str(args.turn_concurrency)]
        )
        try:
            wait_until(lambda: workers_ready(stack, redis), 60, "the delivery and turn workers")
            idle_rss = rss_bytes(worker.pid)
            roots = [
                slack.add_user_message(f"C{1000 + i}", f"<@{BOT_USER_ID}> job {i}", user=f"W{i:06d}")
                for i in range(args.sessions)
            ]
            keys = [SessionKey(team="T111", channel=r["channel"], thread_ts=r["ts"]) for r in roots]
            for key in keys[: args.heavy]:
                fill_workspace(Path(tmp) / "workspaces", key)
            sampler = Sampler(redis, worker.pid, keys, ttl_ms)
            sampler.start()
            sent: dict[str, float] = {}

            def send(index: int) -> int:
                root = roots[index]
                words = f"{'[heavy] ' if index < args.heavy else ''}job {index}"
                body = app_mention(root["ts"], root["channel"], words, f"Evc{index}", user=f"W{index:06d}")
                sent[root["ts"]] = time.time()
                return stack.send_event(body).status_code

            with ThreadPoolExecutor(SEND_THREADS) as pool:
                statuses = list(pool.map(send, range(args.sessions)))
            sending_s = max(sent.values()) - min(sent.values())
            all_in = lambda: len(answer_times(slack, ANSWER)) >= args.sessions  # noqa: E731
            if not wait_until(all_in, 120, "every answer", poll_s=ANSWERS_POLL_S):
                lines = stack.log("worker").splitlines()
                first = next((i for i, line in enumerate(lines) if " ERROR " in line), len(lines))
                print("\n".join(["  the worker's first error:", *lines[first : first + 40]]))
            sampler.stop.set()
            sampler.join()
            answered = answer_times(slack, ANSWER)
        finally:
            stack.stop()
            worker_log = stack.log("worker")
            stall_s = longest_loop_stall(worker_log)
            loop_cpu_s = loop_cpu(worker_log)
            leases_lost = worker_log.count("lost the lease of")
    slack.stop()
    llm.stop()
    report(args, statuses, sending_s, sent, answered, idle_rss, sampler, ttl_ms)
    report_stages(args, [r["ts"] for r in roots], sent, asked, answered)
    print(f"longest stall of the worker's turn event loop: {stall_s} (logged by the worker as it stops)")
    if loop_cpu_s is not None:
        requests = args.sessions * (args.tool_steps + 1)
        print(
            f"CPU time of that loop's thread: {loop_cpu_s:.2f} s, {loop_cpu_s / args.sessions * 1000:.1f} ms "
            f"a turn, {loop_cpu_s / requests * 1000:.1f} ms a model request (all its work divided by "
            f"{requests}): turns whose answers come together keep the loop busy that long each"
        )
    print(f"leases the worker logged as lost: {leases_lost} (target 0: none is taken in this run)")


def longest_loop_stall(worker_log: str) -> str:
    # Before the turn host, a worker said "the turns' event loop" (`--source` of an older checkout).
    found = re.findall(r"the turns(?: worker's|') event loop stalled at most ([0-9.]+ s)", worker_log)
    return found[-1] if found else "not logged"


def loop_cpu(worker_log: str) -> float | None:
    line = r"the turns worker's event loop stalled at most [0-9.]+ s; its thread ran ([0-9.]+) CPU-s"
    found = re.findall(line, worker_log)
    return float(found[-1]) if found else None


def report(args, statuses, sending_s, sent, answered, idle_rss, sampler, ttl_ms) -> None:  # type: ignore[no-untyped-def]
    latencies = sorted(answered[ts] - sent[ts] for ts in answered if ts in sent)
    target_s = args.model_s + 3
    print(
        f"{args.sessions} mentions sent in {sending_s:.2f} s ({statuses.count(200)} acknowledged); "
        f"model answers after {args.model_s:g} s; one `threadline worker --turn-concurrency "
        f"{args.turn_concurrency}`; {args.heavy} of the turns grep "
        f"{HEAVY_FILES * HEAVY_FILE_BYTES // 10**6} MB first; each runs {args.tool_steps} list_dir step(s)"
    )
    if latencies:
        p99 = percentile_99(latencies)
        met = latencies[-1] <= target_s and len(latencies) == args.sessions
        print(
            f"answers posted: {len(latencies)}/{args.sessions}; mention → answer p50 "
            f"{statistics.median(latencies):.2f} s, p99 {p99:.2f} s, max {latencies[-1]:.2f} s "
            f"(target: all within {target_s:g} s: {'met' if met else 'MISSED'})"
        )
    per_turn = (sampler.peak_rss - idle_rss) / args.sessions / 1e6
    print(
        f"worker tree RSS: idle {idle_rss / 1e6:.1f} MB, peak {sampler.peak_rss / 1e6:.1f} MB, "
        f"{per_turn:.2f} MB per turn in flight (target <= 2 MB: {'met' if per_turn <= 2 else 'MISSED'})"
    )
    limit = ttl_ms / 3
    print(
        f"longest lease renewal gap: {sampler.longest_gap_ms / 1000:.2f} s (target < LEASE_TTL_SECONDS/3 = "
        f"{limit / 1000:.2f} s: {'met' if sampler.longest_gap_ms < limit else 'MISSED'})"
    )


def percentile_99(ordered: list[float]) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def report_stages(args, threads, sent, asked, answered) -> None:  # type: ignore[no-untyped-def]
    """Where the time beyond the model's went: before the first model request, and after the last answer."""
    before, after = [], []
    for index, ts in enumerate(threads):
        requests = asked.get(f"job {index}")
        if requests and ts in sent:
            before.append(requests[0] - sent[ts])
        if requests and ts in answered:
            after.append(answered[ts] - requests[-1] - args.model_s)

    def spread(values: list[float]) -> str:
        return f"p50 {statistics.median(values):.2f} s, p99 {percentile_99(sorted(values)):.2f} s"

    if before and after:
        print(f"mention → first model request: {spread(before)}; model's answer → posted: {spread(after)}")


if __name__ == "__main__":
    main()
