"""Test doubles at the tool seam: tools whose runs the test controls and observes."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent.messages import ToolCall
from agent.tools.base import Tool, ToolCallResult, ToolContext, ToolExecution, ToolResult
from agent.tools.cancel import CancelSignal
from agent.tools.executor import ToolExecutor
from agent.tools.registry import ToolRegistry

DEADLINE_S = 10.0


class AnyArgs(BaseModel):
    model_config = ConfigDict(extra="allow")


Behaviour = Callable[[Any, ToolContext], Awaitable[Any]]


async def _ok(args: Any, context: ToolContext) -> Any:
    return ToolResult(f"{context.tool_name} result")


class ScriptedTool(Tool[AnyArgs]):
    """Runs `behaviour`; counts runs; declares the given accesses (None = all)."""

    parameters = AnyArgs
    description = "a scripted test tool"

    def __init__(
        self,
        name: str,
        behaviour: Behaviour = _ok,
        *,
        accesses: Sequence[Any] | None = None,
        stop_batch_after_this: bool = False,
    ) -> None:
        self.name = name  # type: ignore[misc]
        self.behaviour = behaviour
        self.declared = accesses
        self.stop_batch_after_this = stop_batch_after_this
        self.runs = 0
        self.finished = 0

    def resolve_execution(self, args: AnyArgs, context: ToolContext) -> ToolExecution:
        return ToolExecution(
            run=lambda: self.run(args, context),
            accesses=self.declared,
            stop_batch_after_this=self.stop_batch_after_this,
        )

    async def run(self, args: AnyArgs, context: ToolContext) -> Any:
        self.runs += 1
        value = await self.behaviour(args, context)
        self.finished += 1
        return value


class Gate:
    """A tool behaviour that records its start and waits until the test opens it."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.opened = asyncio.Event()
        self.cancelled = False

    async def __call__(self, args: Any, context: ToolContext) -> ToolResult:
        self.started.set()
        try:
            await self.opened.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return ToolResult(f"{context.tool_name} result")


def call(call_id: str, name: str, arguments: Any = None) -> ToolCall:
    raw = arguments if isinstance(arguments, str) or arguments is None else json.dumps(arguments)
    return ToolCall(id=call_id, name=name, arguments=raw)


def executor_with(*tools: Tool[Any], workspace: Path, **options: Any) -> ToolExecutor:
    return ToolExecutor(ToolRegistry(tools), workspace=workspace, **options)


async def collect(
    executor: ToolExecutor, calls: Sequence[ToolCall], signal: CancelSignal | None = None
) -> list[ToolCallResult]:
    async def gather() -> list[ToolCallResult]:
        return [item async for item in executor.execute(calls, signal)]

    return await asyncio.wait_for(gather(), DEADLINE_S)


async def run_one(executor: ToolExecutor, tool_call: ToolCall) -> ToolResult:
    (item,) = await collect(executor, [tool_call])
    assert item.tool_call_id == tool_call.id
    return item.result


async def wait_until(predicate: Callable[[], bool], deadline_s: float = DEADLINE_S) -> None:
    """Poll `predicate` until it holds; fail when the deadline passes."""
    end = time.monotonic() + deadline_s
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("condition not reached before the deadline")
        await asyncio.sleep(0.01)


def process_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in {"Z", "X"}


def pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def rename_snake_schema_keys(schema: Any) -> Any:
    """The vectors spell additionalProperties in snake_case; JSON Schema spells it in camelCase."""
    if isinstance(schema, dict):
        return {
            ("additionalProperties" if key == "additional_properties" else key): rename_snake_schema_keys(
                value
            )
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [rename_snake_schema_keys(item) for item in schema]
    return schema


def expand(notation: str) -> str:
    """The vectors' shorthand for long strings: "x*50001 + 'tail'" → "x" * 50001 + "tail"."""
    text = ""
    for piece in notation.split(" + "):
        piece = piece.strip()
        if piece.startswith("'") and piece.endswith("'"):
            text += piece[1:-1]
            continue
        char, count = piece.split("*")
        text += char * int(count)
    return text
