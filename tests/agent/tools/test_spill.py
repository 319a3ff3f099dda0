import re

import pytest

from agent.messages import ImageURLPart, MediaURL, TextPart
from agent.tools.base import ToolResult, ToolResultSpill
from agent.tools.spill import spill_stem, truncate_for_model
from tests.agent.tools.helpers import ScriptedTool, call, executor_with, expand, run_one
from tests.vectors import vectors_with_prefix

TRUNC = {vector["id"]: vector for vector in vectors_with_prefix("trunc-")}
POINTER_PATH = re.compile(r"^output_path: (.+)$", re.MULTILINE)


def lines(text):
    return text.split("\n")


def saved_file(workspace, rendered):
    return workspace / POINTER_PATH.search(rendered).group(1)


def test_trunc_01_spills_with_the_sanitised_stem_and_keeps_the_error_flag(tmp_path):
    given = TRUNC["trunc-01"]["input"]
    expected = TRUNC["trunc-01"]["expected"]
    full = expand(given["output"])
    result = truncate_for_model(
        ToolResult(full, is_error=given["is_error"]),
        tool_name=given["tool_name"],
        tool_call_id=given["tool_call_id"],
        workspace=tmp_path,
    )
    assert (result.truncated, result.is_error) == (expected["truncated"], expected["is_error"])
    rendered = lines(result.output)
    # The newer contract's header; the name, id and sizes are those the vector states.
    assert rendered[0] == "Tool output exceeded 50000 characters; the full output was saved to a file."
    assert rendered[1:5] == expected["output_lines"][1:5]
    stem = expected["output_lines"][5].rsplit("/", 1)[1].split("-<uuid>")[0]
    assert stem == spill_stem(given["tool_name"], given["tool_call_id"])
    assert re.fullmatch(rf"output_path: \.threadline/tool-results/{stem}-[0-9a-f-]{{36}}\.txt", rendered[5])
    assert saved_file(tmp_path, result.output).read_text() == full  # "full original output"


@pytest.mark.parametrize("case", range(2))
def test_trunc_02_truncated_and_media_results_are_returned_unchanged(case, tmp_path):
    given = TRUNC["trunc-02"]["input"]["cases"][case]
    output = given["output"]
    if isinstance(output, list):
        output = [
            TextPart(text=expand(part["text"]))
            if part["type"] == "text"
            else ImageURLPart(image_url=MediaURL(url="data:image/png;base64,AA"))
            for part in output
        ]
    else:
        output = expand(output)
    original = ToolResult(output, truncated=given.get("truncated", False))
    assert truncate_for_model(original, tool_name="t", tool_call_id="c", workspace=tmp_path) is original
    assert TRUNC["trunc-02"]["expected"]["unchanged"]
    assert not (tmp_path / ".threadline").exists()


@pytest.mark.parametrize(
    ("name", "call_id", "stem"),
    [
        ("Lookup Tool", "call:lookup", "Lookup_Tool-call_lookup"),
        ("__read__", "__", "read__-"),
        ("é", "c.1", "-c.1"),
        ("a  b", "x/../y", "a_b-x_.._y"),
    ],
)
def test_stems_are_sanitised(name, call_id, stem):
    assert spill_stem(name, call_id) == stem


def test_stems_are_cut_to_eighty_chars():
    assert spill_stem("n" * 100, "id") == "n" * 80


def test_results_within_the_limit_are_unchanged(tmp_path):
    result = ToolResult("x" * 50_000)
    assert truncate_for_model(result, tool_name="t", tool_call_id="c", workspace=tmp_path) is result


@pytest.mark.anyio
async def test_a_200000_char_output_becomes_a_pointer_with_head_and_tail(tmp_path):
    full = "".join(f"line {n:06d} " + "y" * 80 + "\n" for n in range(2200))[:200_000]
    assert len(full) == 200_000

    async def big(args, context):
        return ToolResult(full)

    result = await run_one(executor_with(ScriptedTool("big", big), workspace=tmp_path), call("c-1", "big"))
    assert result.truncated and not result.is_error
    rendered = lines(result.output)
    assert rendered[:8] == [
        "Tool output exceeded 50000 characters; the full output was saved to a file.",
        "tool_name: big",
        "tool_call_id: c-1",
        "output_size_chars: 200000",
        "output_size_bytes: 200000",
        rendered[5],
        "next_step: Use read_file with output_path to page through the saved output, or grep to search it.",
        "",
    ]
    assert saved_file(tmp_path, result.output).read_text() == full
    head_start = rendered.index("[preview: chars [0, 4096)]") + 1
    elided = rendered.index("[elided: chars [4096, 198976)]")
    tail_marker = rendered.index("[preview: chars [198976, 200000)]")
    assert "\n".join(rendered[head_start : elided - 1]) == full[:4096]
    assert "\n".join(rendered[tail_marker + 1 :]) == full[198976:]
    assert len(result.output) < 7_000


def test_long_lines_in_the_preview_are_cut(tmp_path):
    full = "z" * 60_000
    result = truncate_for_model(ToolResult(full), tool_name="t", tool_call_id="c", workspace=tmp_path)
    rendered = lines(result.output)
    head = rendered[rendered.index("[preview: chars [0, 4096)]") + 1]
    assert head == "z" * 1986 + "[...truncated]"
    assert saved_file(tmp_path, result.output).read_text() == full


def test_a_capped_result_names_what_was_saved_and_carries_the_suffix(tmp_path):
    retained = "r" * 60_000
    spill = ToolResultSpill(total_chars=90_000, suffix="Command failed with exit code 1.")
    result = truncate_for_model(
        ToolResult(retained, is_error=True, spill=spill), tool_name="t", tool_call_id="c", workspace=tmp_path
    )
    rendered = lines(result.output)
    assert rendered[0] == (
        "Tool output exceeded 50000 characters; the first 60000 characters (of 90000) were saved to a file."
    )
    assert rendered[3] == "output_size_chars: 90000"
    assert not any(line.startswith("output_size_bytes") for line in rendered)
    assert rendered[-2:] == ["", "Command failed with exit code 1."]
    assert result.is_error and result.spill is None


def test_a_failed_save_still_gives_a_preview(tmp_path):
    (tmp_path / ".threadline").write_text("a file where the directory should be")
    result = truncate_for_model(ToolResult("q" * 50_001), tool_name="t", tool_call_id="c", workspace=tmp_path)
    rendered = lines(result.output)
    assert rendered[:4] == [
        "Tool output exceeded 50000 characters and could not be saved to a file;"
        " only this preview is available.",
        "tool_name: t",
        "tool_call_id: c",
        "output_size_chars: 50001",
    ]
    assert "[preview: chars [0, 4096)]" in rendered
    assert result.truncated


def test_spill_exempt_results_pass_through(tmp_path):
    result = ToolResult("e" * 60_000, spill_exempt=True)
    assert truncate_for_model(result, tool_name="t", tool_call_id="c", workspace=tmp_path) is result


def test_text_parts_are_joined_before_measuring(tmp_path):
    result = ToolResult([TextPart(text="first\n"), TextPart(text="y" * 50_001)])
    spilled = truncate_for_model(result, tool_name="t", tool_call_id="c", workspace=tmp_path)
    assert saved_file(tmp_path, spilled.output).read_text() == "first\n" + "y" * 50_001
