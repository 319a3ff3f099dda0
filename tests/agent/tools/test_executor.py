import asyncio

import pytest

from agent.messages import ImageURLPart, MediaURL, TextPart
from agent.tools import CancelSignal, texts
from agent.tools import accesses as acc
from agent.tools.base import ToolResult
from agent.tools.builtin import ReadFile, WriteFile
from tests.agent.tools.helpers import Gate, ScriptedTool, call, collect, executor_with, run_one, wait_until

pytestmark = pytest.mark.anyio


def returning(value):
    async def behaviour(args, context):
        return value

    return behaviour


async def test_invalid_json_is_reported_and_the_tool_never_runs(tmp_path):
    tool = ScriptedTool("loose")  # its schema accepts {}: running it would be easy and wrong
    result = await run_one(executor_with(tool, workspace=tmp_path), call("c1", "loose", '{"path": "a",'))
    assert tool.runs == 0
    assert result.is_error
    assert result.output == 'Invalid args for tool "loose": the arguments are not valid JSON'
    assert result.note.startswith("The arguments were not valid JSON (")
    assert "line 1 column" in result.note


async def test_arguments_nested_past_the_parsers_depth_are_invalid_json_and_the_batch_goes_on(tmp_path):
    # The model's arguments are anyone's text: 100,000 brackets made json raise RecursionError,
    # and the whole batch failed as a bug, the calls beside it included.
    deep, plain = ScriptedTool("deep"), ScriptedTool("plain")
    nested = '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    calls = [call("c1", "deep", nested), call("c2", "plain", "{}")]
    results = {
        item.tool_call_id: item.result
        for item in await collect(executor_with(deep, plain, workspace=tmp_path), calls)
    }
    assert results["c1"].output == 'Invalid args for tool "deep": the arguments are not valid JSON'
    assert "nested too deeply" in results["c1"].note
    assert deep.runs == 0 and plain.runs == 1 and not results["c2"].is_error


async def test_invalid_json_also_shows_the_schema_errors(tmp_path):
    tool = ReadFile()
    result = await run_one(executor_with(tool, workspace=tmp_path), call("c1", "read_file", "{nope"))
    assert result.output == "Invalid args for tool \"read_file\": must have required property 'path'"
    assert "not valid JSON" in result.note


async def test_null_arguments_mean_an_empty_object(tmp_path):
    tool = ScriptedTool("loose")
    result = await run_one(executor_with(tool, workspace=tmp_path), call("c1", "loose", None))
    assert (tool.runs, result.output) == (1, "loose result")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, 'Tool "t" returned no result.'),
        ("text", 'Tool "t" returned a string instead of a tool result.'),
        (42, 'Tool "t" returned a number instead of a tool result.'),
        (True, 'Tool "t" returned a boolean instead of a tool result.'),
        ({"is_error": False}, 'Tool "t" returned a result with a missing or malformed "output" field.'),
        ({"output": 5}, 'Tool "t" returned a result with a missing or malformed "output" field.'),
        (["a"], 'Tool "t" returned a result with a missing or malformed "output" field.'),
        (ToolResult(output=5), 'Tool "t" returned a result with a missing or malformed "output" field.'),
    ],
)
async def test_what_a_tool_returns_is_coerced_with_the_exact_text(value, expected, tmp_path):
    result = await run_one(
        executor_with(ScriptedTool("t", returning(value)), workspace=tmp_path), call("c", "t")
    )
    assert (result.output, result.is_error) == (expected, True)


async def test_a_mapping_with_an_output_is_a_result(tmp_path):
    value = {"output": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "note": "n"}
    result = await run_one(
        executor_with(ScriptedTool("t", returning(value)), workspace=tmp_path), call("c", "t")
    )
    assert (result.output, result.note, result.is_error) == ("ab", "n", False)


async def test_an_exception_without_a_message_names_its_type(tmp_path):
    async def explode(args, context):
        raise KeyError()

    result = await run_one(executor_with(ScriptedTool("t", explode), workspace=tmp_path), call("c", "t"))
    assert result.output == 'Tool "t" failed: KeyError'


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("", texts.TOOL_OUTPUT_EMPTY),
        ([], texts.TOOL_OUTPUT_EMPTY),
        ([TextPart(text="a"), TextPart(text="b")], "ab"),
    ],
)
async def test_output_is_normalised(output, expected, tmp_path):
    tool = ScriptedTool("t", returning(ToolResult(output)))
    assert (await run_one(executor_with(tool, workspace=tmp_path), call("c", "t"))).output == expected


async def test_media_without_text_gets_a_leading_text(tmp_path):
    image = ImageURLPart(image_url=MediaURL(url="data:image/png;base64,AA"))
    tool = ScriptedTool("t", returning(ToolResult([TextPart(text=""), image])))
    result = await run_one(executor_with(tool, workspace=tmp_path), call("c", "t"))
    assert result.output == [TextPart(text=texts.NON_TEXT_CONTENT), TextPart(text=""), image]


async def test_a_ready_result_with_stop_turn_skips_the_later_calls(tmp_path):
    class Stopper(ScriptedTool):
        def resolve_execution(self, args, context):
            return ToolResult("stopping", stop_turn=True)

    later = ScriptedTool("later")
    results = await collect(
        executor_with(Stopper("stop"), later, workspace=tmp_path), [call("a", "stop"), call("b", "later")]
    )
    by_id = {item.tool_call_id: item.result for item in results}
    assert by_id["a"].output == "stopping" and by_id["a"].stop_turn
    assert (by_id["b"].output, by_id["b"].is_error) == (texts.SKIPPED_AFTER_STOP, True)
    assert later.runs == 0


async def test_a_failure_to_resolve_the_execution_is_reported(tmp_path):
    class Broken(ScriptedTool):
        def resolve_execution(self, args, context):
            raise ValueError("bad plan")

    result = await run_one(executor_with(Broken("b"), workspace=tmp_path), call("c", "b"))
    assert result.output == 'Tool "b" failed to resolve execution: bad plan'


async def test_cancel_before_the_batch_answers_every_call_without_running_anything(tmp_path):
    tool = ScriptedTool("t")
    signal = CancelSignal()
    signal.cancel("user_cancelled")
    results = await collect(executor_with(tool, workspace=tmp_path), [call("a", "t"), call("b", "t")], signal)
    assert [item.result.output for item in results] == [texts.aborted("t", "user_cancelled")] * 2
    assert tool.runs == 0


async def test_the_user_cancel_text_reaches_a_running_tool(tmp_path):
    gate = Gate()
    signal = CancelSignal()
    batch = asyncio.ensure_future(
        collect(executor_with(ScriptedTool("t", gate), workspace=tmp_path), [call("a", "t")], signal)
    )
    await asyncio.wait_for(gate.started.wait(), 10)
    signal.cancel("user_cancelled")
    (item,) = await batch
    assert item.result.output.startswith('The user manually interrupted "t" (and anything else running')
    assert item.result.is_error


async def test_a_tool_that_ignores_the_cancel_is_abandoned_after_the_grace(tmp_path):
    release = asyncio.Event()

    async def stubborn(args, context):
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue  # refuses to stop
        return ToolResult("too late")

    tool = ScriptedTool("stubborn", stubborn)
    signal = CancelSignal()
    executor = executor_with(tool, workspace=tmp_path, abort_grace_ms=100)
    batch = asyncio.ensure_future(collect(executor, [call("a", "stubborn")], signal))
    await wait_until(lambda: tool.runs == 1)
    signal.cancel()
    (item,) = await batch
    assert item.result.output == 'Tool "stubborn" was aborted'
    assert tool.finished == 0  # the result came while the tool was still running
    release.set()
    await wait_until(lambda: tool.finished == 1)  # its late result is dropped, not delivered twice


async def test_two_writers_of_one_file_are_serialised_while_a_reader_of_another_runs(tmp_path):
    first, second, reader = Gate(), Gate(), Gate()
    reading = ScriptedTool("read", reader, accesses=acc.read_file("/w/b"))
    executor = executor_with(
        ScriptedTool("write1", first, accesses=acc.write_file("/w/a")),
        ScriptedTool("write2", second, accesses=acc.write_file("/w/a")),
        reading,
        workspace=tmp_path,
    )
    calls = [call("1", "write1"), call("2", "write2"), call("3", "read")]
    batch = asyncio.ensure_future(collect(executor, calls))
    await asyncio.wait_for(asyncio.gather(first.started.wait(), reader.started.wait()), 10)
    assert not second.started.is_set()
    first.opened.set()
    await asyncio.wait_for(second.started.wait(), 10)
    assert reading.finished == 0  # the reader has been running alongside both writers
    reader.opened.set()
    second.opened.set()
    assert sorted(item.tool_call_id for item in await batch) == ["1", "2", "3"]


async def test_the_real_writer_declares_conflicting_accesses_for_the_same_file(tmp_path):
    from agent.tools.accesses import accesses_conflict
    from agent.tools.base import ToolContext
    from agent.tools.builtin.read_file import ReadFileParams
    from agent.tools.builtin.write_file import WriteFileParams

    context = ToolContext(workspace=tmp_path, signal=CancelSignal())
    write_a = WriteFile().resolve_execution(WriteFileParams(path="a", content="1"), context).accesses
    write_a_again = WriteFile().resolve_execution(WriteFileParams(path="./a", content="2"), context).accesses
    read_b = ReadFile().resolve_execution(ReadFileParams(path="b"), context).accesses
    assert accesses_conflict(write_a, write_a_again)
    assert not accesses_conflict(write_a, read_b)


async def test_every_call_gets_exactly_one_result_whatever_happens(tmp_path):
    async def explode(args, context):
        raise RuntimeError("boom")

    tools = [
        ScriptedTool("ok"),
        ScriptedTool("boom", explode),
        ScriptedTool("none", returning(None)),
        ScriptedTool("str", returning("x")),
        ScriptedTool("exclusive"),
    ]
    names = ["ok", "boom", "none", "str", "exclusive", "missing", "ok", "exclusive"]
    calls = [call(f"c{index}", name, "{}" if index % 3 else "{bad") for index, name in enumerate(names)]
    results = await collect(executor_with(*tools, workspace=tmp_path), calls)
    assert sorted(item.tool_call_id for item in results) == sorted(c.id for c in calls)


async def test_an_empty_batch_yields_nothing(tmp_path):
    assert await collect(executor_with(workspace=tmp_path), []) == []
