"""A quick yes/no check for the JSON-schema subset pydantic emits for tool parameters.

Full validation with `jsonschema` costs tens of microseconds per call, most of it building
validator objects for subschemas. Most calls are valid, so the executor first asks this
compiled check; only when it says "invalid", or when the schema uses a keyword outside the
subset (then `compile_check` returns None), does `jsonschema` run and word the errors.
The check must never accept what JSON Schema rejects; the test suite compares the two.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

# Keywords that never affect validity.
ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}
)
SUPPORTED = ANNOTATIONS | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "anyOf",
    "allOf",
}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


TYPE_CHECKS: dict[str, Check] = {
    "null": lambda value: value is None,
    "boolean": lambda value: isinstance(value, bool),
    "integer": lambda value: _is_number(value) and (isinstance(value, int) or float(value).is_integer()),
    "number": _is_number,
    "string": lambda value: isinstance(value, str),
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, dict),
}


class _Unsupported(Exception):
    pass


def _type_check(declared: Any) -> Check:
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or any(name not in TYPE_CHECKS for name in names):
        raise _Unsupported
    checks = [TYPE_CHECKS[name] for name in names]
    return lambda value: any(check(value) for check in checks)


def _bound(keyword: str, limit: Any) -> Check:
    if not _is_number(limit):
        raise _Unsupported
    comparisons: dict[str, Check] = {
        "minimum": lambda value: value >= limit,
        "maximum": lambda value: value <= limit,
        "exclusiveMinimum": lambda value: value > limit,
        "exclusiveMaximum": lambda value: value < limit,
    }
    compare = comparisons[keyword]
    return lambda value: not _is_number(value) or compare(value)


def _size(keyword: str, limit: Any, applies: Check) -> Check:
    if not isinstance(limit, int) or isinstance(limit, bool):
        raise _Unsupported
    if keyword.startswith("min"):
        return lambda value: not applies(value) or len(value) >= limit
    return lambda value: not applies(value) or len(value) <= limit


def _object_checks(schema: Mapping[str, Any]) -> list[Check]:
    checks: list[Check] = []
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        raise _Unsupported
    compiled = {name: _compile(sub) for name, sub in properties.items()}
    if compiled:
        checks.append(
            lambda value: (
                not isinstance(value, dict)
                or all(check(value[name]) for name, check in compiled.items() if name in value)
            )
        )
    required = schema.get("required", [])
    if required:
        checks.append(lambda value: not isinstance(value, dict) or all(name in value for name in required))
    extra = schema.get("additionalProperties", True)
    if extra is False:
        checks.append(lambda value: not isinstance(value, dict) or all(name in compiled for name in value))
    elif extra is not True:
        extra_check = _compile(extra)
        checks.append(
            lambda value: (
                not isinstance(value, dict)
                or all(extra_check(item) for name, item in value.items() if name not in compiled)
            )
        )
    return checks


def _compile(schema: Any) -> Check:
    if schema is True:
        return lambda value: True
    if schema is False:
        return lambda value: False
    if not isinstance(schema, Mapping) or not set(schema) <= SUPPORTED:
        raise _Unsupported
    checks: list[Check] = []
    if "type" in schema:
        checks.append(_type_check(schema["type"]))
    for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if keyword in schema:
            checks.append(_bound(keyword, schema[keyword]))
    for keyword in ("minLength", "maxLength"):
        if keyword in schema:
            checks.append(_size(keyword, schema[keyword], TYPE_CHECKS["string"]))
    for keyword in ("minItems", "maxItems"):
        if keyword in schema:
            checks.append(_size(keyword, schema[keyword], TYPE_CHECKS["array"]))
    if "items" in schema:
        item_check = _compile(schema["items"])
        checks.append(lambda value: not isinstance(value, list) or all(item_check(item) for item in value))
    checks.extend(_object_checks(schema))
    if "anyOf" in schema:
        branches = [_compile(sub) for sub in schema["anyOf"]]
        checks.append(lambda value: any(branch(value) for branch in branches))
    if "allOf" in schema:
        parts = [_compile(sub) for sub in schema["allOf"]]
        checks.append(lambda value: all(part(value) for part in parts))
    return lambda value: all(check(value) for check in checks)


def compile_check(schema: Any) -> Check | None:
    """A function telling whether data is valid, or None when the schema is outside the subset."""
    try:
        return _compile(schema)
    except _Unsupported:
        return None
