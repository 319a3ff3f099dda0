"""Run several threadline processes together in the foreground.

`threadline run` runs web and worker this way, `threadline worker` its delivery and turn
workers, and the sandbox its web and worker. A command is an argv, started as a new program, or
a function, run in a child forked from this process: `threadline worker` forks its RQ workers
after importing what they run, so each starts in a fraction of a fresh interpreter's second.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Protocol

STOP_GRACE_S = 10
WAIT_POLL_S = 0.05

Command = list[str] | Callable[[], int]


class Child(Protocol):
    returncode: int | None

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...


def run_together(
    commands: Mapping[str, Command],
    env: Mapping[str, str] | None = None,
    *,
    stop_grace_s: float = STOP_GRACE_S,
    started: Callable[[], None] | None = None,
) -> int:
    """Start every command, then call `started` (which may start threads); when one exits or on
    Ctrl-C / SIGTERM, stop them all: SIGTERM, then SIGKILL after `stop_grace_s`, or at once on a
    second SIGTERM. Returns the first exit code."""
    children = {name: _start(command, env) for name, command in commands.items()}
    if started is not None:
        started()
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


def _start(command: Command, env: Mapping[str, str] | None) -> Child:
    if isinstance(command, list):
        return subprocess.Popen(command, env=dict(env or os.environ))
    return Forked(command, env)


class Forked:
    """A child forked from this process to run `main`; what a Popen is to a command.

    Forked before this process starts any thread (a thread's locks would be copied held)."""

    def __init__(self, main: Callable[[], int], env: Mapping[str, str] | None = None) -> None:
        if threading.active_count() > 1:
            raise RuntimeError("fork the children before starting a thread")
        self.returncode: int | None = None
        sys.stdout.flush()
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:
            os._exit(_run_child(main, env))

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(WAIT_POLL_S)
        return code

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)


def _run_child(main: Callable[[], int], env: Mapping[str, str] | None) -> int:
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    try:
        return main()
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 1
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def _stop_all(children: list[Child], grace_s: float) -> None:
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


def _kill_all(children: list[Child]) -> None:
    for child in children:
        if child.poll() is None:
            child.kill()
