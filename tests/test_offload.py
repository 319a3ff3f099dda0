"""The core's blocking and CPU-bound work goes through agent.offload, and only through it."""

from __future__ import annotations

import ast
import asyncio
import contextvars
import threading
from pathlib import Path

from agent.offload import THREAD_PREFIX, in_thread

ROOT = Path(__file__).resolve().parent.parent
ALLOWED = {"agent/offload.py"}
OFF_LOOP_CALLS = {"to_thread", "run_in_executor"}


def test_no_code_of_the_core_leaves_the_loop_but_through_agent_offload():
    found = []
    for path in sorted((ROOT / "agent").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in OFF_LOOP_CALLS and relative not in ALLOWED:
                found.append(f"{relative}:{node.lineno} {node.attr}")
    assert found == []


def test_work_in_the_tools_lane_runs_in_a_named_thread_with_the_callers_context():
    where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="unset")

    def seen() -> tuple[str, str]:
        return threading.current_thread().name, where.get()

    async def run() -> tuple[str, str]:
        where.set("the caller's")
        return await in_thread(seen)

    name, value = asyncio.run(run())
    assert name.startswith(THREAD_PREFIX) and value == "the caller's"
