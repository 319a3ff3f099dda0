"""A worker SIGKILLed at each point of a multi-step turn breaks none of the promises.

The same harness as `python -m bench.chaos` (which runs many random kills); here one kill at
each point, so every CI run covers the model call, a running tool, the gap between steps and
delivery.
"""

from __future__ import annotations

from pathlib import Path

from bench.chaos import KILL_POINTS, run_chaos


def test_a_worker_killed_at_each_point_loses_nothing_and_repeats_nothing(
    tmp_path: Path, redis, redis_url: str
) -> None:
    report = run_chaos(len(KILL_POINTS), seed=3, redis_url=redis_url, workdir=tmp_path, points=KILL_POINTS)

    assert [run.point for run in report.runs] == list(KILL_POINTS)
    assert report.broken() == [], "\n".join(report.lines())
    assert all(run.answers_in_thread == 1 for run in report.runs)
