"""The exec-* vectors, run through the real executor with scripted tools at the tool seam."""

import asyncio

import pytest

from agent.tools import CancelSignal, ToolRegistry
from agent.tools import accesses as acc
from agent.tools.base import ToolResult
from agent.tools.executor import ToolExecutor
from tests.agent.tools.helpers import (
    Gate,
    ScriptedTool,
    call,
    collect,
    executor_with,
    rename_snake_schema_keys,
)
from tests.vectors import vectors_with_prefix

pytestmark = pytest.mark.anyio
EXEC = {vector["id"]: vector for vector in vectors_with_prefix("exec-")}


def calls_of(vector):
    return [call(item["id"], item["name"], item.get("arguments")) for item in vector["input"]["calls"]]


def assert_results(results, expected):
    by_id = {item.tool_call_id: item.result for item in results}
    assert len(by_id) == len(results) == len(expected)
    for item in expected:
        result = by_id[item["tool_call_id"]]
        assert result.output == item["output"]
        assert result.is_error is item.get("is_error", False)


def test_all_eight_exec_vectors_are_covered():
    assert sorted(EXEC) == [f"exec-0{n}" for n in range(1, 9)]


async def test_exec_01_unknown_tool(tmp_path):
    vector = EXEC["exec-01"]
    assert vector["input"]["registry"] == []
    results = await collect(executor_with(workspace=tmp_path), calls_of(vector))
    assert_results(results, vector["expected"]["results"])


@pytest.mark.parametrize("vector_id", ["exec-02", "exec-03"])
async def test_exec_02_03_schema_failures_never_run_the_tool(vector_id, tmp_path):
    vector = EXEC[vector_id]
    tool = ScriptedTool("strict")
    registry = ToolRegistry()
    registry.register(tool, schema=rename_snake_schema_keys(vector["input"]["schema"]))
    results = await collect(ToolExecutor(registry, workspace=tmp_path), calls_of(vector))
    assert_results(results, vector["expected"]["results"])
    assert (tool.runs > 0) is vector["expected"]["tool_executed"]


async def test_exec_04_a_raising_tool(tmp_path):
    vector = EXEC["exec-04"]

    async def explode(args, context):
        raise RuntimeError(vector["input"]["tool_throws"])

    results = await collect(
        executor_with(ScriptedTool("fail", explode), workspace=tmp_path), calls_of(vector)
    )
    assert_results(results, vector["expected"]["results"])


async def test_exec_05_a_tool_returning_nothing(tmp_path):
    vector = EXEC["exec-05"]

    async def nothing(args, context):
        return vector["input"]["tool_returns"]

    results = await collect(
        executor_with(ScriptedTool("corrupt", nothing), workspace=tmp_path), calls_of(vector)
    )
    assert_results(results, vector["expected"]["results"])


async def test_exec_06_stop_batch_after_this_skips_later_calls(tmp_path):
    vector = EXEC["exec-06"]

    async def first_result(args, context):
        return ToolResult("first result")

    first = ScriptedTool(
        "first", first_result, stop_batch_after_this=vector["input"]["first"]["stop_batch_after_this"]
    )
    second = ScriptedTool("second")
    results = await collect(executor_with(first, second, workspace=tmp_path), calls_of(vector))
    assert_results(results, vector["expected"]["results"])
    assert (second.runs > 0) is vector["expected"]["second_executed"]


async def test_exec_07_abort_while_the_first_of_two_conflicting_writers_runs(tmp_path):
    vector = EXEC["exec-07"]
    assert vector["input"]["accesses"] == "both writeFile /repo/a.ts"
    first_gate, second_gate = Gate(), Gate()
    first = ScriptedTool("first", first_gate, accesses=acc.write_file("/repo/a.ts"))
    second = ScriptedTool("second", second_gate, accesses=acc.write_file("/repo/a.ts"))
    signal = CancelSignal()
    batch = asyncio.ensure_future(
        collect(executor_with(first, second, workspace=tmp_path), calls_of(vector), signal)
    )
    await asyncio.wait_for(first_gate.started.wait(), 10)
    reason = "user_cancelled" if vector["input"]["signal_reason_is_user_cancellation"] else "aborted"
    signal.cancel(reason)
    results = await batch
    assert_results(results, vector["expected"]["results"])
    outcomes = {"call_first": first.runs, "call_second": second.runs}
    assert outcomes == {"call_first": 1, "call_second": 0}  # executed / aborted before it ran
    assert first_gate.cancelled


async def test_exec_08_results_come_in_completion_order(tmp_path):
    vector = EXEC["exec-08"]
    assert vector["input"]["fast_finishes_first"]
    slow_gate = Gate()

    async def fast(args, context):
        return ToolResult("fast")

    slow = ScriptedTool("slow", slow_gate, accesses=acc.read_file("/repo/slow.txt"))
    quick = ScriptedTool("fast", fast, accesses=acc.read_file("/repo/fast.txt"))
    executor = executor_with(slow, quick, workspace=tmp_path)
    order = []

    async def consume():
        async for item in executor.execute([call("s", "slow", "{}"), call("f", "fast", "{}")]):
            order.append(item.tool_name)
            slow_gate.opened.set()  # the slow one may finish only after the first yield

    await asyncio.wait_for(consume(), 10)
    assert order == vector["expected"]["yield_order"]
