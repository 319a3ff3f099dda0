"""The tools of one turn on top of the process-wide registry.

Argument schemas and their compiled validators are built once per process (they cost tens
of milliseconds); a turn still needs its own instances of some tools (bound to its session:
Skill, Agent, AgentSwarm), may hide some, and may wrap each one (the workspace write lock).
`ToolOverlay` is a registry that does that while reusing the base registry's schemas and
validators by name. `added` brings tools that are not the process's own (an MCP server's, with
the schemas and validators their own registry compiled when the server listed them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agent.tools.base import Tool
from agent.tools.registry import ToolRegistry
from agent.tools.validation import ArgumentValidator

ToolWrapper = Callable[[Tool[Any]], Tool[Any]]


class ToolOverlay(ToolRegistry):
    def __init__(
        self,
        base: ToolRegistry,
        *,
        bound: Mapping[str, Tool[Any]] | None = None,
        hidden: Iterable[str] = (),
        wrap: ToolWrapper | None = None,
        added: ToolRegistry | None = None,
        missing: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__()
        bound = bound or {}
        unknown = set(bound) - set(base.names)
        if unknown:
            raise ValueError(f"bound tools must replace registered ones: {sorted(unknown)}")
        hidden = set(hidden)
        self._base = base
        for name in base.names:
            if name in hidden:
                continue
            tool = bound.get(name) or base.get(name)
            assert tool is not None
            self._tools[name] = wrap(tool) if wrap is not None else tool
        self._missing = missing
        self._added = added or ToolRegistry()
        for tool in self._added:
            if tool.name not in self._tools:
                self._tools[tool.name] = wrap(tool) if wrap is not None else tool

    def _owner(self, name: str) -> ToolRegistry:
        return self._added if name in self._added.names and name not in self._base.names else self._base

    def describe_missing(self, name: str) -> str:
        """The base text, unless `missing` knows better (a tool of an MCP server that is down)."""
        told = self._missing(name) if self._missing is not None else None
        return told if told is not None else super().describe_missing(name)

    def validator(self, name: str) -> ArgumentValidator:
        return self._owner(name).validator(name)

    def schema(self, name: str) -> dict[str, Any]:
        return self._owner(name).schema(name)
