"""Tool batch throughput and per-call overhead: `python -m bench.tools`.

1. 100 independent read_file calls on small files: one batch through batch adapter +
   scheduler + executor, against the same 100 calls run one after another (one-call batches).
2. The cost per call of adapter + scheduler + executor around a no-op tool (median of runs),
   in one large batch and in one-call batches.
3. `shell` running `true`, sandboxed (bubblewrap) and not, interleaved in the same run: the
   median of each and what the sandbox adds per call.

`python -m bench.tools --read-file [REV]` instead times one read_file call and a 100-call
read_file batch (bench/read_file_probe.py) in this tree and in REV's (default: the last commit
before the one way into the workspace, issue 29), in alternating processes of the same run, and
prints what the new way in costs (target: at most 20 % more).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent.messages import ToolCall
from agent.tools import BatchAdapter, ToolExecutor, ToolRegistry, default_registry
from agent.tools import accesses as acc
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin import Shell
from agent.tools.sandbox import UNSANDBOXED, SandboxConfig, sandbox_problem
from bench.read_file_probe import FILES, make_files

RUNS = 15
NOOP_BATCH = 1_000
NOOP_SINGLES = 1_000
TARGET_US = 100.0
SHELL_RUNS = 40
SANDBOX_TARGET_MS = 30.0


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


NOOP_RESULT = ToolResult("ok")


class NoOp(Tool[NoArgs]):
    name = "noop"
    description = "does nothing"
    parameters = NoArgs

    def resolve_execution(self, args: NoArgs, context: ToolContext) -> ToolExecution:
        return ToolExecution(run=self._nothing, accesses=acc.none())

    async def _nothing(self) -> ToolResult:
        return NOOP_RESULT

    async def run(self, args: NoArgs, context: ToolContext) -> ToolResult:
        return NOOP_RESULT


async def run_batch(executor: ToolExecutor, calls: Sequence[ToolCall]) -> list[ToolResult]:
    adapter = BatchAdapter([c.id for c in calls], executor)
    for tool_call in calls:
        adapter.add(tool_call)
    return await adapter.results()


async def timed_batch(executor: ToolExecutor, calls: Sequence[ToolCall]) -> float:
    start = time.perf_counter()
    results = await run_batch(executor, calls)
    elapsed = time.perf_counter() - start
    assert len(results) == len(calls) and not any(r.is_error for r in results), results[:1]
    return elapsed


async def timed_one_by_one(executor: ToolExecutor, calls: Sequence[ToolCall]) -> float:
    start = time.perf_counter()
    for tool_call in calls:
        (result,) = await run_batch(executor, [tool_call])
        assert not result.is_error, result
    return time.perf_counter() - start


def noop_calls(count: int) -> list[ToolCall]:
    return [ToolCall(id=f"noop_{index}", name="noop", arguments="{}") for index in range(count)]


async def bare_noop_cost(count: int) -> float:
    tool = NoOp()
    start = time.perf_counter()
    for _ in range(count):
        await tool._nothing()
    return (time.perf_counter() - start) / count


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1e3:8.2f} ms"


async def shell_true_ms(workspace: Path) -> tuple[float, float] | None:
    """Median ms of `shell` running `true`, (sandboxed, bare), interleaved; None without a sandbox."""
    sandboxed = SandboxConfig()
    if sandbox_problem(sandboxed) is not None:
        print(f"shell sandbox unavailable, not measured: {sandbox_problem(sandboxed)}")
        return None
    if os.geteuid() == 0:  # as a root worker does: the sandbox uid reaches and owns the workspace
        workspace.parent.chmod(0o711)
        os.chown(workspace, sandboxed.uid, sandboxed.uid)
    executors = {
        "sandboxed": ToolExecutor(ToolRegistry([Shell(sandbox=sandboxed)]), workspace=workspace),
        "bare": ToolExecutor(ToolRegistry([Shell(sandbox=UNSANDBOXED)]), workspace=workspace),
    }
    true = [ToolCall(id="true", name="shell", arguments='{"command": "true"}')]
    samples: dict[str, list[float]] = {name: [] for name in executors}
    for executor in executors.values():
        await timed_batch(executor, true)  # warm-up: the probe, imports
    for _ in range(SHELL_RUNS):  # interleaved, so load on the machine affects both alike
        for name, executor in executors.items():
            samples[name].append(await timed_batch(executor, true))
    return statistics.median(samples["sandboxed"]) * 1e3, statistics.median(samples["bare"]) * 1e3


async def main() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        workspace = Path(directory)
        calls = make_files(workspace)
        (workspace / "shell").mkdir()
        executor = ToolExecutor(default_registry(), workspace=workspace)
        await timed_batch(executor, calls)  # warm-up: imports, caches, thread pool
        batched: list[float] = []
        sequential: list[float] = []
        for _ in range(RUNS):  # interleaved, so load on the machine affects both alike
            batched.append(await timed_batch(executor, calls))
            sequential.append(await timed_one_by_one(executor, calls))

        noop_executor = ToolExecutor(ToolRegistry([NoOp()]), workspace=workspace)
        big = noop_calls(NOOP_BATCH)
        singles = noop_calls(NOOP_SINGLES)
        await timed_batch(noop_executor, big)
        per_call_batch = [await timed_batch(noop_executor, big) / NOOP_BATCH for _ in range(RUNS)]
        per_call_single = [await timed_one_by_one(noop_executor, singles) / NOOP_SINGLES for _ in range(RUNS)]
        bare = await bare_noop_cost(100_000)
        shell_ms = await shell_true_ms(workspace / "shell")

    ratio = statistics.median(sequential) / statistics.median(batched)
    batch_us = statistics.median(per_call_batch) * 1e6
    single_us = statistics.median(per_call_single) * 1e6
    print(f"python {sys.version.split()[0]}, median of {RUNS} runs")
    print(f"{FILES} read_file calls, one batch (adapter+scheduler+executor): {median_ms(batched)}")
    print(f"{FILES} read_file calls, one after another (one-call batches):  {median_ms(sequential)}")
    print(f"speed-up of the batch: {ratio:.2f}x")
    print(
        f"no-op tool, per call in a batch of {NOOP_BATCH}:  {batch_us:7.1f} µs (target ≤ {TARGET_US:.0f} µs)"
    )
    print(f"no-op tool, per call as one-call batches:  {single_us:7.1f} µs")
    print(f"no-op tool body alone:                      {bare * 1e6:7.2f} µs")
    print(f"target {'met' if batch_us <= TARGET_US else 'MISSED'}")
    figures = {"batch_us": batch_us, "single_us": single_us, "ratio": ratio}
    if shell_ms is not None:
        figures |= report_shell(*shell_ms)
    return figures


def report_shell(sandboxed_ms: float, bare_ms: float) -> dict[str, float]:
    added = sandboxed_ms - bare_ms
    verdict = "met" if added <= SANDBOX_TARGET_MS else "MISSED"
    print(f"shell `true`, median of {SHELL_RUNS}: sandboxed {sandboxed_ms:6.1f} ms, bare {bare_ms:6.1f} ms")
    print(f"the sandbox adds {added:5.1f} ms per call (target ≤ {SANDBOX_TARGET_MS:.0f} ms): {verdict}")
    return {"shell_sandboxed_ms": sandboxed_ms, "shell_bare_ms": bare_ms}


BASELINE_REV = "a0f6a0c"  # before agent.tools.workspace opened every path from a descriptor
READ_FILE_ROUNDS = 7
READ_FILE_TARGET = 1.20


def probe(tree: Path) -> dict[str, float]:
    """bench/read_file_probe.py of this tree, run on `tree`'s packages."""
    script = Path(__file__).with_name("read_file_probe.py")
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tree, env=environment, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"the probe failed on {tree}:\n{done.stderr}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def read_file_against(rev: str) -> dict[str, float]:
    here = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as directory:
        baseline = Path(directory) / "baseline"
        subprocess.run(
            ["git", "-C", str(here), "worktree", "add", "-q", "--detach", str(baseline), rev], check=True
        )
        try:
            rounds: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
            for _ in range(READ_FILE_ROUNDS):  # alternating, so load on the machine affects both alike
                rounds["before"].append(probe(baseline))
                rounds["after"].append(probe(here))
        finally:
            subprocess.run(
                ["git", "-C", str(here), "worktree", "remove", "--force", str(baseline)], check=True
            )
    return report_read_file(rev, rounds)


def report_read_file(rev: str, rounds: dict[str, list[dict[str, float]]]) -> dict[str, float]:
    figures: dict[str, float] = {}
    print(
        f"read_file, {rev} (before) against this tree (after), median of {READ_FILE_ROUNDS} alternating runs"
    )
    for key, label in [("single_us", "one call"), ("batch_us", "100-call batch")]:
        before = statistics.median(run[key] for run in rounds["before"])
        after = statistics.median(run[key] for run in rounds["after"])
        ratio = after / before
        verdict = "met" if ratio <= READ_FILE_TARGET else "MISSED"
        print(
            f"{label:>15}: before {before:9.1f} µs, after {after:9.1f} µs, "
            f"ratio {ratio:.2f} (target ≤ {READ_FILE_TARGET:.2f}): {verdict}"
        )
        figures |= {f"{key}_before": before, f"{key}_after": after}
    return figures


if __name__ == "__main__":
    if sys.argv[1:2] == ["--read-file"]:
        read_file_against(sys.argv[2] if len(sys.argv) > 2 else BASELINE_REV)
    else:
        asyncio.run(main())
