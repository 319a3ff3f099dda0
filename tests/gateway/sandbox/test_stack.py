"""The stack's processes run the checkout they are given (gateway.sandbox.stack)."""

from __future__ import annotations

import sys
from pathlib import Path

from gateway.sandbox.stack import SOURCE_ROOT, Stack
from tests.polling import wait_for


def imported_from(stack: Stack, name: str) -> str:
    process = stack.processes[name]
    wait_for(lambda: process.poll() is not None, what=f"{name} to exit")
    return stack.log(name).strip()


def test_a_stack_of_another_checkout_runs_that_checkout_in_every_process(tmp_path: Path) -> None:
    """A base commit measured with `bench.concurrency --source` must run its own code in each
    process, also in those started with `python -m` or `-c` (a supervisor's children, as the
    base's `threadline worker` starts them), which look in their working directory first: run
    from this checkout, they had imported this checkout's code instead of the base's."""
    other = tmp_path / "other"
    (other / "jobs").mkdir(parents=True)
    (other / "jobs" / "__init__.py").write_text("")
    stack = Stack(tmp_path, "redis://unused", "http://unused", "http://unused", source_root=other)
    stack.spawn("child", [sys.executable, "-c", "import jobs; print(jobs.__file__)"])
    assert imported_from(stack, "child") == str(other / "jobs" / "__init__.py")


def test_a_stack_of_this_checkout_runs_this_checkout(tmp_path: Path) -> None:
    stack = Stack(tmp_path, "redis://unused", "http://unused", "http://unused")
    stack.spawn("child", [sys.executable, "-c", "import jobs; print(jobs.__file__)"])
    assert imported_from(stack, "child") == str(SOURCE_ROOT / "jobs" / "__init__.py")
