"""`threadline worker` as a process tree: its RQ workers never outlive it."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from redis import Redis

from agent.tools.sandbox import descendants
from gateway.sandbox.stack import THREADLINE, Stack
from tests.polling import wait_for
from tests.rq_state import workers


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def _niceness(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def _group_niceness(pid: int) -> int | None:
    group = Path(f"/proc/{pid}/autogroup")  # absent on kernels without autogroup scheduling
    return int(group.read_text().split()[-1]) if group.exists() else None


def test_the_workers_run_below_web_priority_and_die_with_their_supervisor(
    tmp_path: Path, redis: Redis, redis_url: str
) -> None:
    stack = Stack(tmp_path, redis_url, "http://127.0.0.1:9/api/", "http://127.0.0.1:9/v1")
    supervisor = stack.spawn("worker", [THREADLINE, "worker", "--turn-workers", "2"])
    below: list[int] = []
    try:
        wait_for(lambda: workers(redis) == 3, what="a delivery and two turn workers")
        below += descendants(supervisor.pid)
        assert len(below) >= 3
        assert {_niceness(pid) for pid in below} == {10}  # WORKER_NICENESS: web goes first
        # The supervisor leads a session of its own here, as under a process manager: without
        # its autogroup lowered too, the nice value would rank the workers only among themselves.
        assert {_group_niceness(pid) for pid in below} <= {10, None}
        assert {os.sched_getscheduler(pid) for pid in below} == {os.SCHED_BATCH}  # never preempts web

        os.kill(supervisor.pid, signal.SIGKILL)
        supervisor.wait(timeout=10)

        wait_for(lambda: not any(_alive(pid) for pid in below), what="every worker below it to die")
    finally:
        stack.stop()
        for pid in below:  # without the lifeline they would outlive the test and take its jobs
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
