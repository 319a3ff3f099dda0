import json

import pytest

from agent.tools.cancel import CancelSignal
from agent.tools.policy import AllowAll, NoGuard
from agent.tools.preflight import PreparedCall, preflight_call
from agent.tools.registry import ToolRegistry
from agent.tools.validation import ArgumentValidator, ajv_keyword_order
from tests.agent.tools.helpers import ScriptedTool, call, rename_snake_schema_keys
from tests.vectors import ids, vectors_for

PREFLIGHT_VECTORS = vectors_for("preflight (schema validation)")


def preflight(tool_name, schema, raw, tmp_path):
    registry = ToolRegistry()
    registry.register(ScriptedTool(tool_name), schema=rename_snake_schema_keys(schema))
    return preflight_call(
        call("call_1", tool_name, raw),
        registry=registry,
        workspace=tmp_path,
        signal=CancelSignal(),
        guard=NoGuard(),
        policy=AllowAll(),
    )


@pytest.mark.parametrize("vector", PREFLIGHT_VECTORS, ids=ids(PREFLIGHT_VECTORS))
def test_preflight_vector(vector, tmp_path):
    given = vector["input"]
    expected = vector["expected"]["output"]
    outcome = preflight(given["tool_name"], given["schema"], given["raw"], tmp_path)
    assert not isinstance(outcome, PreparedCall)
    assert expected["ok"] is False
    assert outcome.output == expected["output"]
    assert outcome.is_error


def test_valid_arguments_pass_preflight(tmp_path):
    schema = {"type": "object", "properties": {"value": {"type": "number"}}, "required": ["value"]}
    outcome = preflight("strict", schema, '{"value": 2}', tmp_path)
    assert isinstance(outcome, PreparedCall)
    assert outcome.arguments.value == 2


def check(schema, data):
    return ArgumentValidator(schema).errors(data)


OBJECT = {
    "type": "object",
    "properties": {
        "a": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "b": {"type": "integer", "minimum": 3},
        "c": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        "d": {"type": "string", "enum": ["x", "y"]},
        "e": {"type": "object", "properties": {"f": {"type": "string", "minLength": 2}}, "required": ["g"]},
    },
    "required": ["a"],
    "additionalProperties": False,
}


def test_errors_follow_ajv_order_and_wording():
    data = {"a": 5, "b": 1.5, "c": [1, 2, 1, "x"], "d": "z", "e": {"f": "q"}, "zz": 1}
    assert check(OBJECT, data) == [
        "must NOT have additional property 'zz'",
        "/a must be string",
        "/a must be null",
        "/a must match a schema in anyOf",
        "/b must be integer",
        "/b must be >= 3",
        "/c must NOT have duplicate items (items ## 2 and 0 are identical)",
        "/c/3 must be integer",
        "/d must be equal to one of the allowed values",
        "must have required property 'g'",
        "/e/f must NOT have fewer than 2 characters",
    ]


def test_a_passing_anyof_branch_discards_the_other_branches_errors():
    assert check(OBJECT, {"a": None}) == []


def test_each_extra_property_is_its_own_error_in_instance_order():
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    assert check(schema, {"y": 1, "x": 2}) == [
        "must NOT have additional property 'y'",
        "must NOT have additional property 'x'",
    ]


def test_a_type_without_rules_for_it_is_checked_first():
    schema = {"type": "string", "enum": ["a"]}
    assert check(schema, 5) == ["must be string", "must be equal to one of the allowed values"]


def test_a_type_with_rules_is_checked_at_its_group_after_untyped_keywords():
    schema = {"type": "string", "minLength": 2, "enum": ["abc"]}
    assert check(schema, 5) == ["must be equal to one of the allowed values", "must be string"]


def test_several_types_are_listed_with_commas():
    assert check({"type": ["string", "null"]}, 1) == ["must be string,null"]


def test_limits_are_printed_as_javascript_numbers():
    schema = {"type": "number", "maximum": 2.0, "exclusiveMinimum": 0.5}
    assert check(schema, 3) == ["must be <= 2"]
    assert check(schema, 0.5) == ["must be > 0.5"]


@pytest.mark.parametrize(
    ("schema", "data", "errors"),
    [
        ({"maxLength": 1}, "ab", ["must NOT have more than 1 characters"]),
        ({"pattern": "^a"}, "b", ['must match pattern "^a"']),
        ({"minItems": 2}, [1], ["must NOT have fewer than 2 items"]),
        ({"maxProperties": 0}, {"a": 1}, ["must NOT have more than 0 properties"]),
        ({"const": 1}, 2, ["must be equal to constant"]),
        ({"not": {"type": "string"}}, "a", ["must NOT be valid"]),
        ({"multipleOf": 3}, 4, ["must be multiple of 3"]),
        (
            {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            1.5,
            [
                "must be string",
                "must be integer",
                "must match exactly one schema in oneOf",
            ],
        ),
        (
            {"if": {"type": "string"}, "then": {"minLength": 2}},
            "a",
            [
                "must NOT have fewer than 2 characters",
                'must match "then" schema',
            ],
        ),
        ({"contains": {"type": "string"}}, [1], ["must contain at least 1 valid item(s)"]),
        ({"prefixItems": [{"type": "integer"}], "items": False}, [1, 2], ["must NOT have more than 1 items"]),
        ({"format": "email"}, "not-an-email", ['must match format "email"']),
        ({"properties": {"a/b": {"type": "string"}}}, {"a/b": 1}, ["/a~1b must be string"]),
    ],
)
def test_keyword_messages(schema, data, errors):
    assert check(schema, data) == errors


def test_refs_into_defs_are_followed():
    schema = {
        "type": "object",
        "properties": {"inner": {"$ref": "#/$defs/Inner"}},
        "$defs": {"Inner": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    }
    assert check(schema, {"inner": {"n": "x"}}) == ["/inner/n must be integer"]


def test_the_keyword_order_puts_object_keywords_in_ajv_sequence():
    schema = {"properties": {}, "required": [], "additionalProperties": False, "type": "object"}
    assert [keyword for keyword, _ in ajv_keyword_order(schema)] == [
        "required",
        "additionalProperties",
        "properties",
        "type",
    ]


def test_describe_joins_errors_or_says_valid():
    validator = ArgumentValidator({"type": "object", "required": ["a", "b"]})
    assert validator.describe({}) == "must have required property 'a'; must have required property 'b'"
    assert validator.describe({"a": 1, "b": 2}) is None


# A pattern that backtracks without end on a string the model wrote: a server's schema and the
# model's arguments may both be hostile, and validation runs on the loop every turn shares.
BACKTRACKING = "^(a|aa)+$"
ENDLESS = "a" * 64 + "!"


def test_a_pattern_that_backtracks_without_end_refuses_the_call_rather_than_hold_the_loop(tmp_path):
    schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": BACKTRACKING}}}

    outcome = preflight("lookup", schema, json.dumps({"q": ENDLESS}), tmp_path)

    assert not isinstance(outcome, PreparedCall) and outcome.is_error
    assert f'/q must match pattern "{BACKTRACKING}" (it could not be checked in time' in outcome.output
    assert isinstance(preflight("lookup", schema, '{"q": "aaaa"}', tmp_path), PreparedCall)


def test_a_property_name_that_backtracks_without_end_is_refused_too(tmp_path):
    schema = {
        "type": "object",
        "patternProperties": {BACKTRACKING: {"type": "string"}},
        "additionalProperties": False,
    }

    outcome = preflight("lookup", schema, json.dumps({ENDLESS: "x"}), tmp_path)

    assert not isinstance(outcome, PreparedCall) and outcome.is_error
    assert (
        f"property name '{ENDLESS}' could not be checked against \"{BACKTRACKING}\" in time" in outcome.output
    )
    assert isinstance(preflight("lookup", schema, '{"aaa": "x"}', tmp_path), PreparedCall)
    assert check(schema, {"b": "x"}) == ["must NOT have additional property 'b'"]
