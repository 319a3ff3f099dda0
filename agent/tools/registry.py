"""The tools a session offers: lookup by name, compiled argument checks, model declarations."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from agent.tools import texts
from agent.tools.base import Tool
from agent.tools.validation import ArgumentValidator

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")


def _without_titles(schema: Any) -> Any:
    """Drop pydantic's generated `title`s (tokens the model does not need); keep property names."""
    if isinstance(schema, list):
        return [_without_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            cleaned[key] = {name: _without_titles(sub) for name, sub in value.items()}
        else:
            cleaned[key] = _without_titles(value)
    return cleaned


def parameters_schema(tool: Tool[Any]) -> dict[str, Any]:
    """The JSON schema the model sees for a tool's arguments (its pydantic model's schema)."""
    schema: dict[str, Any] = _without_titles(tool.parameters.model_json_schema())
    return schema


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool[Any]] = ()) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        self._schemas: dict[str, dict[str, Any]] = {}
        self._validators: dict[str, ArgumentValidator] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool[Any], schema: dict[str, Any] | None = None) -> None:
        """Add a tool; `schema` overrides the one derived from its parameter model."""
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        chosen = schema if schema is not None else parameters_schema(tool)
        self._validators[tool.name] = ArgumentValidator(chosen)
        self._schemas[tool.name] = chosen
        self._tools[tool.name] = tool

    def include(self, other: ToolRegistry) -> None:
        """Add `other`'s tools with the schemas and validators it already compiled."""
        for tool in other:
            if tool.name in self._tools:
                raise ValueError(f"a tool named {tool.name!r} is already registered")
            self._adopt(tool, other)

    def rebound(self, tools: Iterable[Tool[Any]]) -> ToolRegistry:
        """This registry with other instances of its tools (same names, schemas and validators)."""
        copy = ToolRegistry()
        for tool in tools:
            copy._adopt(tool, self)
        return copy

    def _adopt(self, tool: Tool[Any], compiled: ToolRegistry) -> None:
        self._tools[tool.name] = tool
        self._schemas[tool.name] = compiled.schema(tool.name)
        self._validators[tool.name] = compiled.validator(tool.name)

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def validator(self, name: str) -> ArgumentValidator:
        return self._validators[name]

    def schema(self, name: str) -> dict[str, Any]:
        return self._schemas[name]

    def describe_missing(self, name: str) -> str:
        """The model's text for a call to a tool this registry does not have."""
        return texts.not_found(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def __iter__(self) -> Iterator[Tool[Any]]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)


def openai_tool_declarations(registry: ToolRegistry) -> list[dict[str, Any]]:
    """The tools as OpenAI function declarations, in registration order."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": registry.schema(tool.name),
            },
        }
        for tool in registry
    ]


def default_registry() -> ToolRegistry:
    """The built-in tools a coding agent needs."""
    from agent.tools.builtin import builtin_tools

    return ToolRegistry(builtin_tools())
