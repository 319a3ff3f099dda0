import pytest

from agent.tools import parse_tool_call_arguments
from tests.vectors import ids, vectors_for

ARGS_VECTORS = vectors_for("parse_tool_call_arguments")


@pytest.mark.parametrize("vector", ARGS_VECTORS, ids=ids(ARGS_VECTORS))
def test_parse_vector(vector):
    expected = vector["expected"]["output"]
    parsed = parse_tool_call_arguments(vector["input"]["raw"])
    assert parsed.data == expected["data"]
    assert type(parsed.data) is type(expected["data"])
    assert parsed.parse_failed is expected["parse_failed"]
    assert (parsed.error is not None) is expected["has_error"]


def test_there_are_vectors_for_every_case_of_4_1():
    assert len(ARGS_VECTORS) == 9


def test_a_non_string_raw_value_is_passed_through():
    raw = {"already": "parsed"}
    assert parse_tool_call_arguments(raw).data is raw


@pytest.mark.parametrize("raw", ["NaN", '{"x": Infinity}', "-Infinity"])
def test_javascript_only_accepts_json_numbers(raw):
    parsed = parse_tool_call_arguments(raw)
    assert parsed.parse_failed
    assert parsed.data == {}


def test_the_error_names_where_parsing_failed():
    parsed = parse_tool_call_arguments('{"text": "hi",}')
    assert "line 1" in parsed.error
