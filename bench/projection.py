"""Projection benchmark: `python -m bench.projection`.

A deterministic agent history (seeded): turns of a user prompt, 1-3 steps of an assistant making
1-3 tool calls each answered by a 1-20 line result, then a final answer. Every message carries a
wire entry id, as folded histories do, so each one has a field to strip.

Figures (median wall time per call):
* cold: fresh message objects, nothing memoised (the first projection of a freshly folded history);
* warm: the same objects projected again (every later projection of a live history);
* incremental: append one step (assistant + results, fresh objects) to a history the projector has
  already seen, then project; with the part of it that only copies the output list (the one
  O(n) piece), and a warm full `project` of the same history for comparison.
The calibration line times a bare Python loop, to compare figures taken on different machines.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from agent.messages import Message, Origin, TextPart, ToolCall
from agent.projection.incremental import IncrementalProjector
from agent.projection.projector import project, project_strict

SEED = 20260512
RUNS = 30
COLD_RUNS_LARGE = 5  # each cold 100k run first rebuilds 100k objects; 5 are enough for a median
CALIBRATION_LOOPS = 10_000_000
SIZES = (10_000, 100_000)
INCREMENTAL_SIZES = (1_000, 10_000, 100_000)
USER = Origin(kind="user")
TOOL_NAMES = ("Read", "Grep", "Bash", "Glob")
WORDS = ("alpha", "beta", "gamma", "delta", "src", "42")


class _History:
    """Generates the history message by message; ids continue across calls."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.entry = 0
        self.call = 0

    def _id(self) -> str:
        self.entry += 1
        return f"{1_700_000_000_000 + self.entry}-0"

    def turn(self) -> Iterator[Message]:
        yield Message(role="user", content=[TextPart(text=self._sentence())], origin=USER, id=self._id())
        for _ in range(self.random.randint(1, 3)):
            yield from self.step()
        yield Message(role="assistant", content=[TextPart(text=self._sentence())], id=self._id())

    def step(self) -> Iterator[Message]:
        calls = []
        for _ in range(self.random.randint(1, 3)):
            self.call += 1
            name = self.random.choice(TOOL_NAMES)
            calls.append(ToolCall(id=f"call_{self.call}", name=name, arguments='{"path": "src/a.py"}'))
        yield Message(role="assistant", content=[TextPart(text="Looking.")], tool_calls=calls, id=self._id())
        for call in calls:
            lines = "\n".join(self._sentence() for _ in range(self.random.randint(1, 20)))
            yield Message(role="tool", content=[TextPart(text=lines)], tool_call_id=call.id, id=self._id())

    def _sentence(self) -> str:
        return " ".join(self.random.choice(WORDS) for _ in range(6))


def history_of(size: int, seed: int = SEED) -> list[Message]:
    generator = _History(seed)
    history: list[Message] = []
    while len(history) < size:
        history.extend(generator.turn())
    return history[:size]


def fresh(history: list[Message]) -> list[Message]:
    """Equal messages with empty memos, as a fresh fold would produce."""
    copies = []
    for message in history:
        copy = message.model_copy()
        copy.__pydantic_private__["_memo"] = None  # model_copy() shares the memo dict; cut it
        copies.append(copy)
    return copies


@dataclass(frozen=True)
class Figure:
    median_ms: float
    min_ms: float

    @classmethod
    def of(cls, samples: list[float]) -> Figure:
        return cls(statistics.median(samples) * 1000, min(samples) * 1000)

    def __str__(self) -> str:
        return f"{self.median_ms:8.2f} ({self.min_ms:6.2f})"


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def calibration_seconds() -> float:
    """A bare 10M-iteration loop, so figures from different machines can be compared."""
    return statistics.median(_timed(lambda: _spin(CALIBRATION_LOOPS)) for _ in range(3))


def _spin(loops: int) -> None:
    for _ in range(loops):
        pass


def full_projection(size: int) -> dict[str, Figure]:
    history = history_of(size)
    cold_runs = RUNS if size <= 10_000 else COLD_RUNS_LARGE
    figures: dict[str, Figure] = {}
    for name, function in (("project", project), ("project_strict", project_strict)):
        function(history)
        figures[f"{name} warm"] = Figure.of([_timed(lambda f=function: f(history)) for _ in range(RUNS)])
        cold = []
        for _ in range(cold_runs):
            copies = fresh(history)
            cold.append(_timed(lambda f=function, copies=copies: f(copies)))
        figures[f"{name} cold"] = Figure.of(cold)
    return figures


def incremental_step(size: int) -> dict[str, Figure]:
    """Append one step (fresh objects) to a history the projector has seen, then project."""
    generator = _History(SEED)
    history: list[Message] = []
    while len(history) < size:
        history.extend(generator.turn())
    projector = IncrementalProjector()
    projector.project(history)
    incremental, copying, full = [], [], []
    for _ in range(RUNS):
        history.extend(generator.step())
        started = time.perf_counter()
        output = projector.project(history)
        incremental.append(time.perf_counter() - started)
        copying.append(_timed(lambda output=output: list(output)))
        full.append(_timed(lambda: project(history)))
        assert output == project(history)
    return {
        "incremental": Figure.of(incremental),
        "  of which copying the output": Figure.of(copying),
        "full project, warm": Figure.of(full),
    }


def main() -> None:
    version = sys.version.split()[0]
    print(f"python {version}; calibration: a bare loop of 10M iterations takes {calibration_seconds():.2f} s")
    print(f"median (min) ms of {RUNS} runs; cold at 100k: {COLD_RUNS_LARGE} runs")
    print("cold = fresh message objects, nothing memoised; warm = the same objects projected again")
    results = {size: full_projection(size) for size in SIZES}
    print(f"{'':20}{'10,000 msgs':>19}{'100,000 msgs':>19}{'100k/10k':>16}")
    for name in ("project warm", "project cold", "project_strict warm", "project_strict cold"):
        small, large = results[SIZES[0]][name], results[SIZES[1]][name]
        ratios = f"{large.median_ms / small.median_ms:.1f}x ({large.min_ms / small.min_ms:.1f}x)"
        print(f"{name:20}{small!s:>19}{large!s:>19}{ratios:>16}")
    print()
    print("append one step, then project (median (min) ms)")
    print(f"{'':32}" + "".join(f"{size:>19,}" for size in INCREMENTAL_SIZES))
    rows = [incremental_step(size) for size in INCREMENTAL_SIZES]
    for name in rows[0]:
        print(f"{name:32}" + "".join(f"{row[name]!s:>19}" for row in rows))


if __name__ == "__main__":
    main()
