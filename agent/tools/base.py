"""The tool contract: parameters in, a `ToolResult` out, plus what an execution touches.

A tool is a class with a name, a description, a pydantic parameter model (its JSON schema
is what the model sees) and `run`. `resolve_execution` turns validated arguments into a
`ToolExecution` (its accesses for the scheduler and the coroutine to run); tools that take
paths resolve them there, so a path outside the workspace is refused before anything runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar

from pydantic import BaseModel

from agent.messages import ContentPart, Message
from agent.tools import workspace as ws
from agent.tools.accesses import Access
from agent.tools.cancel import CancelSignal

ToolOutput = str | list[ContentPart]


@dataclass(frozen=True, slots=True)
class ToolResultSpill:
    """What did not fit: the true size (`total_chars`), and a completion line kept apart (`suffix`)."""

    output_path: str | None = None
    total_chars: int | None = None
    suffix: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    output: ToolOutput
    is_error: bool = False
    note: str | None = None
    truncated: bool = False
    spill: ToolResultSpill | None = None
    spill_exempt: bool = False
    stop_turn: bool = False
    # A message to append after this step's results, as a steer (a loaded skill, context-core.md §6).
    steer: Message | None = None
    # The outcome comes later from elsewhere (a sub-agent): the loop parks the step until then.
    deferred: bool = False

    def text(self) -> str:
        """The text of the output (text parts concatenated)."""
        if isinstance(self.output, str):
            return self.output
        return "".join(getattr(part, "text", "") for part in self.output)

    def with_changes(self, **changes: Any) -> ToolResult:
        return replace(self, **changes)


def error_result(text: str, *, note: str | None = None) -> ToolResult:
    return ToolResult(output=text, is_error=True, note=note)


class ToolCallResult(NamedTuple):
    """One yielded item of a batch: which call, which tool, and its result."""

    tool_call_id: str
    tool_name: str
    result: ToolResult


@dataclass(slots=True)
class ToolContext:
    """What a running tool may use: its workspace, the cancel signal, and its own call id."""

    workspace: Path
    signal: CancelSignal
    tool_call_id: str = ""
    tool_name: str = ""

    def resolve(self, raw_path: str) -> Path:
        """Where the path lies in the workspace, by its text (agent.tools.workspace.place);
        raises PathSecurityError when it leaves. Links are dealt with when it is opened."""
        return ws.place(self.workspace, raw_path)

    def show(self, path: Path) -> str:
        return ws.show(self.workspace, path)


@dataclass(slots=True)
class ToolExecution:
    """A prepared call: what it touches (None = everything) and the coroutine that runs it.

    `preview`, for a call that asks a person first: what they should see besides its arguments
    (the target and the changes of a pull request). It runs only when a person may be asked (not
    when a continuation replays recorded decisions); an exception from it is the call's result
    instead, and nobody is asked."""

    run: Callable[[], Awaitable[Any]]
    accesses: Sequence[Access] | None = None
    stop_batch_after_this: bool = False
    preview: Callable[[], Awaitable[str]] | None = None


P = TypeVar("P", bound=BaseModel)


class Tool(ABC, Generic[P]):
    # Class attributes for a built-in tool; an MCP server's tools set them per instance.
    name: str
    description: str
    parameters: ClassVar[type[BaseModel]]
    # Tools that reach beyond the workspace files (shell, http_get) ask a person first, whatever
    # a deployment's APPROVAL_TOOLS says; see policy.AskForApproval.
    requires_approval: bool = False

    def unavailable_reason(self) -> str | None:
        """A text for the model when the tool exists but cannot be used now, else None."""
        return None

    def accesses(self, args: P, context: ToolContext) -> Sequence[Access] | None:
        """What a call touches; None (the default) means everything, so it runs alone."""
        return None

    def resolve_execution(self, args: P, context: ToolContext) -> ToolExecution | ToolResult:
        """Prepare a call; may raise PathSecurityError, or return a ready result instead."""
        return ToolExecution(run=lambda: self.run(args, context), accesses=self.accesses(args, context))

    @abstractmethod
    async def run(self, args: P, context: ToolContext) -> ToolResult: ...
