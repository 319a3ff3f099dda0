"""One read_file call and a 100-call read_file batch, timed; run by `python -m bench.tools --read-file`.

It uses only names every tree since the batch adapter has (agent.tools' public ones), so
bench.tools runs this same file against an older tree, its packages first on PYTHONPATH, and
compares the two in one run. Prints one JSON line: medians in microseconds.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agent.messages import ToolCall
from agent.tools import BatchAdapter, ToolExecutor, default_registry

FILES = 100
SINGLE_CALLS = 400
BATCHES = 15


def make_files(workspace: Path) -> list[ToolCall]:
    calls = []
    for index in range(FILES):
        name = f"src/file_{index:03d}.py"
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"line {n} of file {index}\n" for n in range(40)))
        calls.append(ToolCall(id=f"read_{index}", name="read_file", arguments=json.dumps({"path": name})))
    return calls


async def timed(executor: ToolExecutor, calls: list[ToolCall]) -> float:
    adapter = BatchAdapter([c.id for c in calls], executor)
    start = time.perf_counter()
    for tool_call in calls:
        adapter.add(tool_call)
    results = await adapter.results()
    elapsed = time.perf_counter() - start
    assert not any(result.is_error for result in results), results[:1]
    return elapsed


async def main() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as directory:
        calls = make_files(Path(directory))
        executor = ToolExecutor(default_registry(), workspace=Path(directory))
        await timed(executor, calls)  # warm-up: imports, caches, thread pool
        single = [await timed(executor, [calls[index % FILES]]) for index in range(SINGLE_CALLS)]
        batch = [await timed(executor, calls) for _ in range(BATCHES)]
    return {"single_us": statistics.median(single) * 1e6, "batch_us": statistics.median(batch) * 1e6}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
    sys.stdout.flush()
