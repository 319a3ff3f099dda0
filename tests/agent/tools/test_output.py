import pytest

from agent.tools import ToolOutputAccumulator
from agent.tools.base import ToolResultSpill
from agent.tools.output import cut_long_lines
from tests.agent.tools.helpers import expand
from tests.vectors import vectors_with_prefix

ACC_VECTORS = vectors_with_prefix("acc-10m-")


def finish(accumulator, call):
    name, _, rest = call.partition("(")
    argument = rest.rstrip(")").strip("'")
    return getattr(accumulator, name)(argument) if argument else getattr(accumulator, name)()


def spill_as_json(spill: ToolResultSpill | None):
    if spill is None:
        return None
    return {
        key: value for key, value in (("total_chars", spill.total_chars), ("suffix", spill.suffix)) if value
    }


@pytest.mark.parametrize("vector", ACC_VECTORS, ids=[v["id"] for v in ACC_VECTORS])
def test_accumulator_vector(vector):
    accumulator = ToolOutputAccumulator()
    for write in vector["input"]["writes"]:
        accumulator.write(expand(write))
    result = finish(accumulator, vector["input"]["finish"])
    expected = vector["expected"]
    if "output" in expected:
        assert result.output == expand(expected["output"])
    if "output_ends_with" in expected:
        assert result.output.endswith(expected["output_ends_with"])
    if "n_chars" in expected:
        assert accumulator.n_chars == expected["n_chars"]
    if "total_chars" in expected:
        assert accumulator.total_chars == expected["total_chars"]
    assert spill_as_json(result.spill) == expected["spill"]


def test_there_are_three_accumulator_vectors():
    assert len(ACC_VECTORS) == 3


def test_ok_with_an_empty_buffer_gives_the_message_with_a_full_stop():
    result = ToolOutputAccumulator().ok("Command executed successfully")
    assert (result.output, result.is_error, result.spill) == ("Command executed successfully.", False, None)


def test_ok_keeps_a_short_buffer_and_drops_the_message():
    accumulator = ToolOutputAccumulator()
    accumulator.write("out")
    assert (accumulator.ok("done").output, accumulator.ok("done").spill) == ("out", None)


def test_error_puts_the_message_on_its_own_line():
    accumulator = ToolOutputAccumulator()
    accumulator.write("partial\n")
    assert accumulator.error("Command failed").output == "partial\nCommand failed"
    accumulator.write("more")
    result = accumulator.error("Command failed")
    assert (result.output, result.is_error, result.spill) == ("partial\nmore\nCommand failed", True, None)


def test_the_retention_cap_counts_every_char_but_keeps_the_first():
    accumulator = ToolOutputAccumulator(max_retained_chars=5)
    accumulator.write("abc")
    accumulator.write("defgh")
    accumulator.write("ij")
    assert (accumulator.text(), accumulator.n_chars, accumulator.total_chars) == ("abcde", 5, 10)


def test_long_lines_are_cut_to_the_limit_with_the_marker():
    line = "a" * 2500
    cut = cut_long_lines(f"short\n{line}\nend")
    first, middle, last = cut.split("\n")
    assert (first, last) == ("short", "end")
    assert len(middle) == 2000
    assert middle.endswith("[...truncated]")
    assert middle.startswith("a" * 1986)


def test_lines_at_the_limit_are_kept():
    text = "b" * 2000
    assert cut_long_lines(text) is text
