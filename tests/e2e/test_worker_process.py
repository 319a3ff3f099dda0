"""`threadline worker` as a process tree: its RQ workers never outlive it."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from redis import Redis

from gateway.sandbox.stack import THREADLINE, Stack, descendants
from tests.polling import wait_for


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_killed_supervisor_takes_its_workers_and_their_schedulers_with_it(
    tmp_path: Path, redis: Redis, redis_url: str
) -> None:
    stack = Stack(tmp_path, redis_url, "http://127.0.0.1:9/api/", "http://127.0.0.1:9/v1")
    supervisor = stack.spawn("worker", [THREADLINE, "worker", "--turn-workers", "2"])
    below: list[int] = []
    try:
        wait_for(lambda: redis.scard("rq:workers") == 3, what="a delivery and two turn workers")
        below += descendants(supervisor.pid)
        assert len(below) >= 3

        os.kill(supervisor.pid, signal.SIGKILL)
        supervisor.wait(timeout=10)

        wait_for(lambda: not any(_alive(pid) for pid in below), what="every worker below it to die")
    finally:
        stack.stop()
        for pid in below:  # without the lifeline they would outlive the test and take its jobs
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
