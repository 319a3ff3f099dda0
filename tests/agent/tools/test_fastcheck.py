import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from agent.tools import default_registry
from agent.tools.fastcheck import compile_check

SCHEMAS = [
    *(default_registry().schema(name) for name in default_registry().names),
    {
        "type": "object",
        "properties": {
            "n": {"anyOf": [{"type": "integer", "minimum": 0, "exclusiveMaximum": 10}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 1},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1.5},
            "flag": {"type": "boolean"},
            "nested": {
                "type": "object",
                "properties": {"a": {"type": "string", "minLength": 1}},
                "required": ["a"],
                "additionalProperties": {"type": "integer"},
            },
        },
        "required": ["n"],
        "additionalProperties": False,
    },
    {"allOf": [{"type": ["string", "integer"]}, {"maxLength": 2}]},
    {"type": "array", "maxItems": 2, "items": False},
    {},
]
KEYS = st.sampled_from(
    ["n", "tags", "ratio", "flag", "nested", "a", "path", "offset", "limit", "x", "content"]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-20, 3000),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-5, max_value=5),
    st.sampled_from([0.0, 1.0, 2.5, 10.0]),
    st.text(max_size=5),
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=5),
    max_leaves=12,
)


@pytest.mark.parametrize("schema", SCHEMAS)
def test_every_builtin_and_sample_schema_compiles(schema):
    assert compile_check(schema) is not None


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
@settings(max_examples=150, deadline=None)
@given(data=JSON)
def test_the_quick_check_agrees_with_jsonschema(index, data):
    schema = SCHEMAS[index]
    assert compile_check(schema)(data) is Draft202012Validator(schema).is_valid(data)


@pytest.mark.parametrize(
    "schema",
    [{"enum": [1]}, {"const": 1}, {"pattern": "a"}, {"format": "email"}, {"$ref": "#/$defs/x"}, {"not": {}}],
)
def test_keywords_outside_the_subset_fall_back_to_full_validation(schema):
    assert compile_check(schema) is None
