"""write_file: create or overwrite a text file."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import Field

from agent.tools import accesses as acc
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError
from agent.tools.workspace import give_to_workspace_owner, missing_directories


class WriteFileParams(Params):
    path: str = Field(description="Path of the file, relative to the workspace (or absolute inside it).")
    content: str = Field(description="The complete new content of the file.")


def _write(workspace: Path, path: Path, shown: str, content: str) -> str:
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; give the path of a file.")
    existed = path.exists()
    created = missing_directories(path.parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8", newline="")
    give_to_workspace_owner(workspace, *created, *([] if existed else [path]))
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {shown}: {len(content)} characters, {lines} lines."


class WriteFile(Tool[WriteFileParams]):
    name = "write_file"
    description = (
        "Write a text file in the workspace, replacing it if it exists and creating missing parent "
        "directories. To change part of an existing file, prefer edit_file."
    )
    parameters = WriteFileParams

    def resolve_execution(self, args: WriteFileParams, context: ToolContext) -> ToolExecution:
        path = context.resolve(args.path)
        return ToolExecution(run=lambda: self._write(path, args, context), accesses=acc.write_file(str(path)))

    async def _write(self, path: Path, args: WriteFileParams, context: ToolContext) -> ToolResult:
        written = await asyncio.to_thread(_write, context.workspace, path, context.show(path), args.content)
        return ToolResult(written)

    async def run(self, args: WriteFileParams, context: ToolContext) -> ToolResult:
        return await self._write(context.resolve(args.path), args, context)
