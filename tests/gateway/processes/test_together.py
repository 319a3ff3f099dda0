"""run_together with forked children (what `threadline worker` runs its RQ workers as).

Each case runs in a fresh interpreter: a pytest worker has threads of its own, and a process
with threads must not fork (run_together refuses to)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

HEADER = """
import os, sys, threading
from gateway.processes.together import Forked, run_together
"""


def run_script(body: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = HEADER + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_the_first_child_to_exit_gives_the_code_and_the_others_are_stopped(tmp_path: Path):
    done = run_script(
        """
        def quick():
            open("quick", "w").write(os.environ["WHO"])
            return 3

        def slow():
            open("slow.pid", "w").write(str(os.getpid()))
            threading.Event().wait()  # until stopped
            return 0

        sys.exit(run_together({"slow": slow, "quick": quick}, env={"WHO": "a child"}, stop_grace_s=5))
        """,
        tmp_path,
    )
    assert done.returncode == 3, done.stderr
    assert (tmp_path / "quick").read_text() == "a child"  # the env given, not the parent's
    slow_pid = int((tmp_path / "slow.pid").read_text())
    assert not Path(f"/proc/{slow_pid}").exists()  # stopped and reaped before run_together returned


def test_a_child_that_raises_prints_its_traceback_and_exits_1(tmp_path: Path):
    done = run_script(
        """
        def broken():
            raise ValueError("the role cannot start")

        sys.exit(run_together({"broken": broken}))
        """,
        tmp_path,
    )
    assert done.returncode == 1
    assert "ValueError: the role cannot start" in done.stderr


def test_started_may_start_threads_because_it_runs_once_the_children_are_forked(tmp_path: Path):
    done = run_script(
        """
        def child():
            return 4

        def started():
            threading.Thread(target=threading.Event().wait, daemon=True).start()
            open("started", "w").write("yes")

        sys.exit(run_together({"one": child, "two": child}, started=started))
        """,
        tmp_path,
    )
    assert done.returncode == 4, done.stderr  # a fork after the thread started would have refused (1)
    assert (tmp_path / "started").read_text() == "yes"


def test_a_process_with_a_thread_refuses_to_fork(tmp_path: Path):
    done = run_script(
        """
        threading.Thread(target=threading.Event().wait, daemon=True).start()
        try:
            Forked(lambda: 0)
        except RuntimeError as refused:
            print(refused)
            sys.exit(0)
        sys.exit(9)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "fork the children before starting a thread" in done.stdout
