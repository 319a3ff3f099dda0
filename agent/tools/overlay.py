"""The tools of one turn on top of the process-wide registry.

Argument schemas and their compiled validators are built once per process (they cost tens
of milliseconds); a turn still needs its own instances of some tools (bound to its session:
Skill, Agent, AgentSwarm), may hide some, and may wrap each one (the workspace write lock).
`ToolOverlay` is a registry that does that while reusing the base registry's schemas and
validators by name.
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

    def validator(self, name: str) -> ArgumentValidator:
        return self._base.validator(name)

    def schema(self, name: str) -> dict[str, Any]:
        return self._base.schema(name)
