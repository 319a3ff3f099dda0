import asyncio

import pytest

from agent.tools import BatchAdapter, CancelSignal, ToolCallResult, texts
from agent.tools.base import ToolResult
from tests.agent.tools.helpers import DEADLINE_S, Gate, ScriptedTool, call, executor_with

pytestmark = pytest.mark.anyio


class RecordingExecutor:
    """An executor at the adapter's seam: records each dispatch, answers only some calls."""

    def __init__(self, answer: set[str] | None = None, fail: bool = False) -> None:
        self.dispatches: list[list[str]] = []
        self.answer = answer
        self.fail = fail

    def execute(self, calls, signal=None):
        self.dispatches.append([c.id for c in calls])
        return self._results(calls)

    async def _results(self, calls):
        for tool_call in calls:
            if self.answer is None or tool_call.id in self.answer:
                yield ToolCallResult(tool_call.id, tool_call.name, ToolResult(f"{tool_call.id} done"))
        if self.fail:
            raise RuntimeError("executor crashed")


async def settled(future):
    return await asyncio.wait_for(future, DEADLINE_S)


async def test_dispatches_once_when_the_last_call_arrives_and_explains_a_missing_result():
    executor = RecordingExecutor(answer={"a"})
    adapter = BatchAdapter(["a", "b"], executor)
    waiter_a = adapter.add(call("a", "first"))
    assert executor.dispatches == []
    waiter_b = adapter.add(call("b", "second"))
    assert executor.dispatches == [["a", "b"]]
    assert (await settled(waiter_a)).output == "a done"
    missing = await settled(waiter_b)
    assert missing.output == (
        'Tool "second" produced no result. Its outcome is unknown: do not assume it ran or did not run.'
    )
    assert missing.is_error
    assert executor.dispatches == [["a", "b"]]


async def test_the_batch_keeps_the_expected_order_whatever_the_arrival_order():
    executor = RecordingExecutor()
    adapter = BatchAdapter(["a", "b", "c"], executor)
    for call_id in ["c", "a", "b"]:
        adapter.add(call(call_id, "t"))
    assert executor.dispatches == [["a", "b", "c"]]
    assert [r.output for r in await asyncio.wait_for(adapter.results(), DEADLINE_S)] == [
        "a done",
        "b done",
        "c done",
    ]


async def test_cancel_before_dispatch_answers_every_waiter_and_never_calls_the_executor():
    executor = RecordingExecutor()
    adapter = BatchAdapter(["a", "b"], executor)
    waiter_a = adapter.add(call("a", "first"))
    adapter.cancel("user_cancelled")
    assert (await settled(waiter_a)).output == texts.aborted("first", "user_cancelled")
    waiter_b = adapter.add(call("b", "second"))  # arrives after the cancel
    assert (await settled(waiter_b)).output == texts.aborted("second", "user_cancelled")
    assert executor.dispatches == []
    assert not adapter.dispatched


async def test_an_executor_that_crashes_leaves_no_waiter_hanging():
    adapter = BatchAdapter(["a", "b"], RecordingExecutor(answer={"a"}, fail=True))
    adapter.add(call("a", "t"))
    waiter_b = adapter.add(call("b", "t"))
    assert (await settled(waiter_b)).output == texts.produced_no_result("t")


async def test_results_for_unknown_ids_are_ignored_and_the_first_result_wins():
    class Noisy(RecordingExecutor):
        async def _results(self, calls):
            yield ToolCallResult("zzz", "t", ToolResult("stray"))
            yield ToolCallResult("a", "t", ToolResult("first"))
            yield ToolCallResult("a", "t", ToolResult("second"))

    adapter = BatchAdapter(["a"], Noisy())
    assert (await settled(adapter.add(call("a", "t")))).output == "first"


async def test_completed_yields_in_completion_order_through_the_real_executor(tmp_path):
    slow_gate = Gate()

    async def fast(args, context):
        return ToolResult("fast")

    from agent.tools import accesses as acc

    executor = executor_with(
        ScriptedTool("slow", slow_gate, accesses=acc.read_file("/s")),
        ScriptedTool("fast", fast, accesses=acc.read_file("/f")),
        workspace=tmp_path,
    )
    adapter = BatchAdapter(["s", "f"], executor)
    adapter.add(call("s", "slow"))
    adapter.add(call("f", "fast"))
    order = []

    async def consume():
        async for item in adapter.completed():
            order.append(item.tool_call_id)
            slow_gate.opened.set()

    await asyncio.wait_for(consume(), DEADLINE_S)
    assert order == ["f", "s"]


async def test_a_cancel_after_dispatch_reaches_the_running_tools(tmp_path):
    gate = Gate()
    signal = CancelSignal()
    adapter = BatchAdapter(["a"], executor_with(ScriptedTool("t", gate), workspace=tmp_path), signal)
    waiter = adapter.add(call("a", "t"))
    await asyncio.wait_for(gate.started.wait(), DEADLINE_S)
    adapter.cancel()
    assert (await settled(waiter)).output == 'Tool "t" was aborted'
    assert gate.cancelled


def test_unexpected_and_repeated_calls_are_refused():
    async def scenario():
        adapter = BatchAdapter(["a", "b"], RecordingExecutor())
        with pytest.raises(ValueError, match="not part of this batch"):
            adapter.add(call("x", "t"))
        adapter.add(call("a", "t"))
        with pytest.raises(ValueError, match="arrived twice"):
            adapter.add(call("a", "t"))

    asyncio.run(scenario())
    with pytest.raises(ValueError, match="distinct"):
        BatchAdapter(["a", "a"], RecordingExecutor())


async def test_an_executor_that_refuses_the_batch_leaves_no_waiter_hanging():
    class Refusing:
        def execute(self, calls, signal=None):
            raise RuntimeError("no")

    adapter = BatchAdapter(["a"], Refusing())
    assert (await settled(adapter.add(call("a", "t")))).output == texts.produced_no_result("t")
