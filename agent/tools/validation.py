"""JSON-schema validation of tool arguments, with errors worded and ordered as ajv words them.

The reference validates with ajv (allErrors) and the model learned its phrasing, so this
module makes `jsonschema` (Draft 2020-12) produce the same list: keywords are visited in
ajv's order (untyped keywords, then the number / string / array / object groups, a type
error either up front or at its group), each own-level error gets ajv's message, `anyOf`
and friends report their branch errors before their own, and a closed object reports one
error per extra property. Rendering follows the executor: `must have required property
'x'`, `must NOT have additional property 'x'`, else `<instancePath> <message>`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import regex
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.validators import create

from agent.tools.fastcheck import compile_check
from agent.tools.texts import VALIDATION_FAILED

UNTYPED_KEYWORDS = ("$ref", "$dynamicRef", "const", "enum", "not", "anyOf", "oneOf", "allOf", "if")
TYPED_GROUPS: dict[str, tuple[str, ...]] = {
    "number": ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf"),
    "string": ("maxLength", "minLength", "pattern", "format"),
    "array": ("maxItems", "minItems", "uniqueItems", "prefixItems", "items", "contains", "unevaluatedItems"),
    "object": (
        "maxProperties",
        "minProperties",
        "required",
        "propertyNames",
        "additionalProperties",
        "properties",
        "patternProperties",
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedProperties",
    ),
}
PATHLESS_KEYWORDS = frozenset({"required", "additionalProperties"})
# A schema's pattern against a string the model wrote, on the loop every turn of the process
# shares: both may be hostile (an MCP server's schema, a prompt-injected argument), and a
# pattern that backtracks without end would hold every turn. `regex` stops a match in time.
PATTERN_TIMEOUT_S = 0.05
_ORIGINAL = Draft202012Validator.VALIDATORS

Keyword = Callable[[Any, Any, Any, Mapping[str, Any]], Iterator[ValidationError]]


def _types_of(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if declared is None:
        return []
    return [declared] if isinstance(declared, str) else list(declared)


def ajv_keyword_order(schema: Any) -> list[tuple[str, Any]]:
    """The schema's keywords in the order ajv evaluates them (allErrors)."""
    if not isinstance(schema, Mapping):
        return []
    types = _types_of(schema)
    single_group = types[0] if len(types) == 1 and types[0] in TYPED_GROUPS else None
    type_at_group = single_group is not None and any(k in schema for k in TYPED_GROUPS[single_group])
    ordered: list[str] = []
    if types and not type_at_group:
        ordered.append("type")
    ordered.extend(UNTYPED_KEYWORDS)
    for group, keywords in TYPED_GROUPS.items():
        ordered.extend(keywords)
        if type_at_group and group == single_group:
            ordered.append("type")
    return [(keyword, schema[keyword]) for keyword in ordered if keyword in schema]


def _js_number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _is_own(error: ValidationError) -> bool:
    """Raised by this keyword itself (not passed up from a subschema)."""
    return error.validator is not None and not isinstance(error.validator, str)


def _worded(original: Keyword, message: Callable[[Any, Any], str]) -> Keyword:
    def check(
        validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
    ) -> Iterator[ValidationError]:
        for error in original(validator, value, instance, schema) or ():
            if _is_own(error):
                error.message = message(value, instance)
            yield error

    return check


def _branches_first(original: Keyword, message: str) -> Keyword:
    """anyOf / oneOf: the failing branches' errors, then the keyword's own error."""

    def check(
        validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
    ) -> Iterator[ValidationError]:
        for error in original(validator, value, instance, schema) or ():
            if not _is_own(error):
                yield error
                continue
            for branch_error in error.context:
                branch_error.parent = None  # it now travels up on its own, not under `error`
                yield branch_error
            yield ValidationError(message)

    return check


def _required(
    validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for name in value:
        if name not in instance:
            yield ValidationError(f"must have required property '{name}'")


def pattern_found(pattern: str, text: str) -> bool | None:
    """Whether `pattern` matches somewhere in `text`; None when that could not be told in time."""
    try:
        return regex.search(pattern, text, timeout=PATTERN_TIMEOUT_S) is not None
    except TimeoutError:
        return None


def _pattern(
    validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    found = pattern_found(value, instance)
    if found is None:
        yield ValidationError(
            f'must match pattern "{value}" (it could not be checked in time: send a shorter value)'
        )
    elif not found:
        yield ValidationError(f'must match pattern "{value}"')


def _pattern_properties(
    validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in value.items():
        for name, item in instance.items():
            found = pattern_found(pattern, name)
            if found is None:
                yield ValidationError(
                    f"property name '{name}' could not be checked against \"{pattern}\" in time"
                )
            elif found:
                yield from validator.descend(item, subschema, path=name, schema_path=pattern)


def _extra_properties(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> Iterator[str]:
    """Names neither in `properties` nor matched by `patternProperties` (one that could not be
    told in time is reported there, not again here)."""
    named = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    for name in instance:
        if name not in named and all(pattern_found(pattern, name) is False for pattern in patterns):
            yield name


def _additional(
    validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object") or value is True:
        return
    extras = list(_extra_properties(instance, schema))
    if value is False:
        for extra in extras:
            yield ValidationError(f"must NOT have additional property '{extra}'")
        return
    for extra in extras:
        yield from validator.descend(instance[extra], value, path=extra)


def _property_names(
    validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for name in instance:
        errors = list(validator.descend(instance=name, schema=value))
        if errors:
            yield from errors
            yield ValidationError("property name must be valid")


def _dependent_required(
    validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for name, dependencies in value.items():
        if name not in instance:
            continue
        noun = "property" if len(dependencies) == 1 else "properties"
        for dependency in dependencies:
            if dependency not in instance:
                yield ValidationError(
                    f"must have {noun} {', '.join(dependencies)} when property {name} is present"
                )


def _if(validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    branch = "then" if validator.evolve(schema=value).is_valid(instance) else "else"
    if branch not in schema:
        return
    errors = list(validator.descend(instance, schema[branch], schema_path=branch))
    if errors:
        yield from errors
        yield ValidationError(f'must match "{branch}" schema')


def _duplicate_pair(validator: Any, instance: list[Any], schema: Mapping[str, Any]) -> tuple[int, int] | None:
    items = schema.get("items")
    item_types = _types_of(items) if isinstance(items, Mapping) else []
    if item_types and not {"object", "array"} & set(item_types):
        # ajv's fast path: walk from the end, remember each value's (later) index.
        seen: dict[tuple[str, Any], int] = {}
        for i in range(len(instance) - 1, -1, -1):
            item = instance[i]
            if not any(validator.is_type(item, t) for t in item_types):
                continue
            key = (type(item).__name__ if isinstance(item, str | bool) else "n", item)
            if key in seen:
                return seen[key], i
            seen[key] = i
        return None
    for i in range(len(instance) - 1, 0, -1):
        for j in range(i - 1, -1, -1):
            if validator.evolve(schema={"const": instance[i]}).is_valid(instance[j]):
                return j, i
    return None


def _unique(
    validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not value or not validator.is_type(instance, "array"):
        return
    pair = _duplicate_pair(validator, instance, schema)
    if pair is not None:
        yield ValidationError(
            f"must NOT have duplicate items (items ## {pair[0]} and {pair[1]} are identical)"
        )


def _contains(
    validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    low = schema.get("minContains", 1)
    high = schema.get("maxContains")
    for error in _ORIGINAL["contains"](validator, value, instance, schema) or ():
        if _is_own(error):
            bounds = (
                f"{_js_number(low)}"
                if high is None
                else f"{_js_number(low)} and no more than {_js_number(high)}"
            )
            error.message = f"must contain at least {bounds} valid item(s)"
        yield error


def _items(validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    prefix = len(schema.get("prefixItems", []))
    for error in _ORIGINAL["items"](validator, value, instance, schema) or ():
        if _is_own(error):
            error.message = f"must NOT have more than {prefix} items"
        yield error


def _type_message(value: Any, instance: Any) -> str:
    return f"must be {','.join(value) if isinstance(value, list) else value}"


def _limit(text: str) -> Callable[[Any, Any], str]:
    return lambda value, instance: text.format(limit=_js_number(value), value=value)


KEYWORDS: dict[str, Keyword] = {
    **_ORIGINAL,
    "type": _worded(_ORIGINAL["type"], _type_message),
    "required": _required,
    "additionalProperties": _additional,
    "propertyNames": _property_names,
    "dependentRequired": _dependent_required,
    "if": _if,
    "anyOf": _branches_first(_ORIGINAL["anyOf"], "must match a schema in anyOf"),
    "oneOf": _branches_first(_ORIGINAL["oneOf"], "must match exactly one schema in oneOf"),
    "not": _worded(_ORIGINAL["not"], lambda value, instance: "must NOT be valid"),
    "enum": _worded(_ORIGINAL["enum"], lambda value, instance: "must be equal to one of the allowed values"),
    "const": _worded(_ORIGINAL["const"], lambda value, instance: "must be equal to constant"),
    "minimum": _worded(_ORIGINAL["minimum"], _limit("must be >= {limit}")),
    "maximum": _worded(_ORIGINAL["maximum"], _limit("must be <= {limit}")),
    "exclusiveMinimum": _worded(_ORIGINAL["exclusiveMinimum"], _limit("must be > {limit}")),
    "exclusiveMaximum": _worded(_ORIGINAL["exclusiveMaximum"], _limit("must be < {limit}")),
    "multipleOf": _worded(_ORIGINAL["multipleOf"], _limit("must be multiple of {limit}")),
    "minLength": _worded(_ORIGINAL["minLength"], _limit("must NOT have fewer than {limit} characters")),
    "maxLength": _worded(_ORIGINAL["maxLength"], _limit("must NOT have more than {limit} characters")),
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "format": _worded(_ORIGINAL["format"], _limit('must match format "{value}"')),
    "minItems": _worded(_ORIGINAL["minItems"], _limit("must NOT have fewer than {limit} items")),
    "maxItems": _worded(_ORIGINAL["maxItems"], _limit("must NOT have more than {limit} items")),
    "minProperties": _worded(
        _ORIGINAL["minProperties"], _limit("must NOT have fewer than {limit} properties")
    ),
    "maxProperties": _worded(
        _ORIGINAL["maxProperties"], _limit("must NOT have more than {limit} properties")
    ),
    "uniqueItems": _unique,
    "contains": _contains,
    "items": _items,
    "unevaluatedProperties": _worded(
        _ORIGINAL["unevaluatedProperties"], lambda value, instance: "must NOT have unevaluated properties"
    ),
    "unevaluatedItems": _worded(
        _ORIGINAL["unevaluatedItems"], lambda value, instance: "must NOT have unevaluated items"
    ),
}

AjvOrderedValidator = create(
    meta_schema=Draft202012Validator.META_SCHEMA,
    validators=KEYWORDS,
    type_checker=Draft202012Validator.TYPE_CHECKER,
    format_checker=Draft202012Validator.FORMAT_CHECKER,
    id_of=Draft202012Validator.ID_OF,
    applicable_validators=ajv_keyword_order,
)


def _pointer(path: Any) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def render_error(error: ValidationError) -> str:
    message = "boolean schema is false" if error.validator is None else error.message
    if error.validator in PATHLESS_KEYWORDS:
        return message
    pointer = _pointer(error.absolute_path)
    return f"{pointer} {message}" if pointer else message


class ArgumentValidator:
    """A compiled check for one tool's parameter schema."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        Draft202012Validator.check_schema(schema)
        self._validator = AjvOrderedValidator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        self._quick = compile_check(schema)

    def errors(self, data: Any) -> list[str]:
        """ajv-worded errors in ajv order; empty when the data is valid."""
        if self._quick is not None and self._quick(data):
            return []
        return [render_error(error) for error in self._validator.iter_errors(data)]

    def describe(self, data: Any) -> str | None:
        """None when valid, else the errors joined with "; " (the text after the colon)."""
        errors = self.errors(data)
        if not errors:
            return None
        return "; ".join(errors) or VALIDATION_FAILED
