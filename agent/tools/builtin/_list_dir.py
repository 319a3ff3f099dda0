"""list_dir: the entries of one directory."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from pydantic import Field

from agent.tools import accesses as acc
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError
from agent.tools.defaults import LIST_DIR_MAX_ENTRIES


class ListDirParams(Params):
    path: str = Field(default=".", description="Directory to list, relative to the workspace.")


def _entry(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return f"{entry.name}@"
    if entry.is_dir():
        return f"{entry.name}/"
    return f"{entry.name}  ({entry.stat().st_size} bytes)"


def _list(path: Path, shown: str) -> str:
    if not path.exists():
        raise ToolError(f"Directory not found: {shown}")
    if not path.is_dir():
        raise ToolError(f"{shown} is a file, not a directory; use read_file to read it.")
    with os.scandir(path) as entries:
        ordered = sorted(entries, key=lambda entry: (not entry.is_dir(follow_symlinks=False), entry.name))
    if not ordered:
        return f"{shown} is empty."
    lines = [_entry(entry) for entry in ordered[:LIST_DIR_MAX_ENTRIES]]
    if len(ordered) > LIST_DIR_MAX_ENTRIES:
        lines.append(
            f"[{len(ordered) - LIST_DIR_MAX_ENTRIES} more entries not shown; use glob to narrow down.]"
        )
    return f"{shown}:\n" + "\n".join(lines)


class ListDir(Tool[ListDirParams]):
    name = "list_dir"
    description = (
        "List the entries of a directory in the workspace: subdirectories first (ending in /), "
        "then files with their sizes; symlinks end in @."
    )
    parameters = ListDirParams

    def resolve_execution(self, args: ListDirParams, context: ToolContext) -> ToolExecution:
        path = context.resolve(args.path)
        # Recursive, to be safe: a write anywhere below changes what a listing may show next.
        return ToolExecution(run=lambda: self._list(path, context), accesses=acc.search_tree(str(path)))

    async def _list(self, path: Path, context: ToolContext) -> ToolResult:
        return ToolResult(await asyncio.to_thread(_list, path, context.show(path)))

    async def run(self, args: ListDirParams, context: ToolContext) -> ToolResult:
        return await self._list(context.resolve(args.path), context)
