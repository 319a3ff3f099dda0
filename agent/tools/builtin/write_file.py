"""write_file: create or overwrite a text file."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from agent.offload import in_thread
from agent.tools import accesses as acc
from agent.tools import workspace as ws
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError, said_to_the_model
from agent.tools.defaults import WRITE_FILE_MAX_BYTES


class WriteFileParams(Params):
    path: str = Field(description="Path of the file, relative to the workspace (or absolute inside it).")
    content: str = Field(description="The complete new content of the file.")


def _write(workspace: Path, path: Path, shown: str, content: str) -> str:
    data = content.encode("utf-8", errors="surrogateescape")
    if len(data) > WRITE_FILE_MAX_BYTES:
        raise ToolError(
            f"The content is {len(data):,} bytes; write_file takes at most {WRITE_FILE_MAX_BYTES:,}."
        )
    with said_to_the_model(shown, "Cannot create {shown}: a part of its path is a file, not a directory."):
        try:
            written = ws.write_bytes(workspace, path, data)
        except IsADirectoryError:
            raise ToolError(f"{shown} is a directory; give the path of a file.") from None
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Created" if written.created else "Overwrote"
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
        written = await in_thread(_write, context.workspace, path, context.show(path), args.content)
        return ToolResult(written)

    async def run(self, args: WriteFileParams, context: ToolContext) -> ToolResult:
        return await self._write(context.resolve(args.path), args, context)
