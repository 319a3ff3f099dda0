"""Write accesses across sessions that share a workspace (a parent and its sub-agents).

The scheduler (context-core.md §4.4) orders the calls of one batch. Sessions sharing a workspace run in
different workers, so a call that writes also holds a workspace-level lock while it runs:
`LockedTool` wraps a tool so that its execution first acquires the lock for the writing
entries it declared (a write or readwrite of a file or tree, or `all` when it declared
nothing, as a shell command does), then runs. Two holders conflict by the scheduler's rule;
reads take no lock and never wait. The lock itself lives outside the core (Redis).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any, Protocol

from agent.tools.accesses import ALL, Access, AllAccess
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult


class WriteLock(Protocol):
    def hold(self, writes: Sequence[Access]) -> AbstractAsyncContextManager[None]:
        """Held while the call runs; waits (cancellably) while a conflicting holder runs."""
        ...


def writes_of(accesses: Sequence[Access] | None) -> tuple[Access, ...]:
    """The entries that need the lock: writes, and `all` (declaring nothing means `all`)."""
    if accesses is None:
        return ALL
    return tuple(a for a in accesses if isinstance(a, AllAccess) or a.writes)


class LockedTool(Tool[Any]):
    """`inner`, whose writing executions hold `lock` while they run."""

    def __init__(self, inner: Tool[Any], lock: WriteLock) -> None:
        self.inner = inner
        self.lock = lock
        # Tools declare these per class; a wrapper takes them per instance from the tool it wraps.
        self.name = inner.name
        self.description = inner.description
        self.parameters = inner.parameters  # type: ignore[misc]  # per-instance identity
        self.requires_approval = inner.requires_approval

    def unavailable_reason(self) -> str | None:
        return self.inner.unavailable_reason()

    def accesses(self, args: Any, context: ToolContext) -> Sequence[Access] | None:
        return self.inner.accesses(args, context)

    def resolve_execution(self, args: Any, context: ToolContext) -> ToolExecution | ToolResult:
        execution = self.inner.resolve_execution(args, context)
        if isinstance(execution, ToolResult):
            return execution
        writes = writes_of(execution.accesses)
        if not writes:
            return execution
        return replace(execution, run=lambda: self._run_locked(execution, writes))

    async def _run_locked(self, execution: ToolExecution, writes: tuple[Access, ...]) -> Any:
        async with self.lock.hold(writes):
            return await execution.run()

    async def run(self, args: Any, context: ToolContext) -> ToolResult:
        execution = self.resolve_execution(args, context)
        if isinstance(execution, ToolResult):
            return execution
        result: ToolResult = await execution.run()
        return result
