"""Run several threadline processes together in the foreground.

`threadline run` runs web and worker this way, `threadline worker` its delivery and turn
workers, and the sandbox its web and worker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping

STOP_GRACE_S = 10


def run_together(
    commands: Mapping[str, list[str]],
    env: Mapping[str, str] | None = None,
    *,
    stop_grace_s: float = STOP_GRACE_S,
) -> int:
    """Start every command; when one exits or on Ctrl-C / SIGTERM, stop them all: SIGTERM, then
    SIGKILL after `stop_grace_s`, or at once on a second SIGTERM. Returns the first exit code."""
    children = {
        name: subprocess.Popen(command, env=dict(env or os.environ)) for name, command in commands.items()
    }
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    try:
        while True:
            for name, child in children.items():
                if child.poll() is not None:
                    print(
                        f"threadline: {name} exited with {child.returncode}; stopping the rest",
                        file=sys.stderr,
                    )
                    return child.returncode or 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        return 0
    finally:
        _stop_all(list(children.values()), stop_grace_s)


def _stop_all(children: list[subprocess.Popen[bytes]], grace_s: float) -> None:
    signal.signal(signal.SIGTERM, lambda *_: _kill_all(children))  # asked twice: no more waiting
    for child in children:
        if child.poll() is None:
            child.terminate()
    deadline = time.monotonic() + grace_s
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _kill_all(children: list[subprocess.Popen[bytes]]) -> None:
    for child in children:
        if child.poll() is None:
            child.kill()
