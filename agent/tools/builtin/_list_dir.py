"""list_dir: the entries of one directory."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from agent.offload import in_thread
from agent.tools import accesses as acc
from agent.tools import workspace as ws
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError, said_to_the_model
from agent.tools.defaults import LIST_DIR_MAX_ENTRIES


class ListDirParams(Params):
    path: str = Field(default=".", description="Directory to list, relative to the workspace.")


def _entry(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return f"{entry.name}@"
    if entry.is_dir(follow_symlinks=False):
        return f"{entry.name}/"
    try:
        return f"{entry.name}  ({entry.stat(follow_symlinks=False).st_size} bytes)"
    except OSError:
        return f"{entry.name}  (removed while listed)"


def _list(workspace: Path, path: Path, shown: str) -> str:
    with said_to_the_model(shown, "Directory not found: {shown}"):
        opened = ws.open_entry(workspace, path)
    with opened:
        if not opened.is_directory:
            raise ToolError(f"{shown} is a file, not a directory; use read_file to read it.")
        with os.scandir(opened.fd) as entries:  # entries are looked up from this descriptor
            ordered = sorted(entries, key=lambda entry: (not entry.is_dir(follow_symlinks=False), entry.name))
            lines = [_entry(entry) for entry in ordered[:LIST_DIR_MAX_ENTRIES]]
    if not ordered:
        return f"{shown} is empty."
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
        return ToolResult(await in_thread(_list, context.workspace, path, context.show(path)))

    async def run(self, args: ListDirParams, context: ToolContext) -> ToolResult:
        return await self._list(context.resolve(args.path), context)
