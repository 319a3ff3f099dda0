"""edit_file: replace an exact piece of text in a file."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import Field

from agent.tools import accesses as acc
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError, require_text_file


class EditFileParams(Params):
    path: str = Field(description="Path of the file, relative to the workspace (or absolute inside it).")
    old_text: str = Field(description="The exact text to replace, including whitespace and indentation.")
    new_text: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every occurrence instead of exactly one.")


def _edit(path: Path, shown: str, args: EditFileParams) -> str:
    if not args.old_text:
        raise ToolError("old_text must not be empty; use write_file to create or overwrite a whole file.")
    if args.old_text == args.new_text:
        raise ToolError("old_text and new_text are the same; there is nothing to change.")
    require_text_file(path, shown)
    content = path.read_text(encoding="utf-8", errors="surrogateescape")
    count = content.count(args.old_text)
    if count == 0:
        raise ToolError(
            f"old_text was not found in {shown}. It must match the file exactly, including whitespace "
            "and indentation; read the file to copy the text."
        )
    if count > 1 and not args.replace_all:
        raise ToolError(
            f"old_text occurs {count} times in {shown}; include more surrounding text so it matches "
            "exactly once, or set replace_all to true."
        )
    updated = content.replace(args.old_text, args.new_text)
    path.write_text(updated, encoding="utf-8", errors="surrogateescape", newline="")
    return f"Replaced {count} occurrence{'s' if count > 1 else ''} in {shown}."


class EditFile(Tool[EditFileParams]):
    name = "edit_file"
    description = (
        "Replace an exact piece of text in a text file. old_text must occur exactly once unless "
        "replace_all is true; copy it from read_file output without the line-number prefix."
    )
    parameters = EditFileParams

    def resolve_execution(self, args: EditFileParams, context: ToolContext) -> ToolExecution:
        path = context.resolve(args.path)
        return ToolExecution(
            run=lambda: self._edit(path, args, context), accesses=acc.read_write_file(str(path))
        )

    async def _edit(self, path: Path, args: EditFileParams, context: ToolContext) -> ToolResult:
        return ToolResult(await asyncio.to_thread(_edit, path, context.show(path), args))

    async def run(self, args: EditFileParams, context: ToolContext) -> ToolResult:
        return await self._edit(context.resolve(args.path), args, context)
