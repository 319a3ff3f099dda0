"""read_file: a page of a text file, with line numbers."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import Field

from agent.tools import accesses as acc
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError, require_text_file
from agent.tools.defaults import (
    MAX_LINE_CHARS,
    READ_FILE_DEFAULT_LINES,
    READ_FILE_MAX_CHARS,
    READ_INLINE_MAX_BYTES,
)
from agent.tools.output import cut_long_lines


class ReadFileParams(Params):
    path: str = Field(description="Path of the file, relative to the workspace (or absolute inside it).")
    offset: int = Field(default=1, ge=1, description="Line number to start at (1 is the first line).")
    limit: int = Field(
        default=READ_FILE_DEFAULT_LINES, ge=1, le=READ_FILE_DEFAULT_LINES, description="Most lines to return."
    )


def _is_small(path: Path) -> bool:
    try:
        return path.stat().st_size <= READ_INLINE_MAX_BYTES
    except OSError:
        return True  # _page reports the problem


def _page(path: Path, shown: str, offset: int, limit: int) -> str:
    require_text_file(path, shown)
    lines: list[str] = []
    size = 0
    total = 0
    with path.open("r", encoding="utf-8", errors="replace", newline=None) as handle:
        for number, line in enumerate(handle, start=1):
            total = number
            if number < offset or len(lines) >= limit or size > READ_FILE_MAX_CHARS:
                continue
            text = cut_long_lines(line.rstrip("\n"), MAX_LINE_CHARS)
            numbered = f"{number:>6}\t{text}"
            if size + len(numbered) > READ_FILE_MAX_CHARS and lines:
                size = READ_FILE_MAX_CHARS + 1  # page full: count the rest only
                continue
            lines.append(numbered)
            size += len(numbered) + 1
    if total == 0:
        return f"{shown} is empty."
    if offset > total:
        raise ToolError(f"{shown} has {total} lines; offset {offset} is past the end.")
    last = offset + len(lines) - 1
    if offset == 1 and last == total:
        return "\n".join(lines)
    footer = (
        f"[Lines {offset}-{last} of {total}.{f' Continue with offset={last + 1}.' if last < total else ''}]"
    )
    return "\n".join([*lines, footer])


class ReadFile(Tool[ReadFileParams]):
    name = "read_file"
    description = (
        "Read a text file from the workspace. Returns lines prefixed with their line numbers "
        f"(up to {READ_FILE_DEFAULT_LINES} lines or about {READ_FILE_MAX_CHARS} characters per call; "
        "use offset to continue). Lines longer than 2000 characters are cut."
    )
    parameters = ReadFileParams

    def resolve_execution(self, args: ReadFileParams, context: ToolContext) -> ToolExecution:
        path = context.resolve(args.path)
        return ToolExecution(run=lambda: self._read(path, args, context), accesses=acc.read_file(str(path)))

    async def _read(self, path: Path, args: ReadFileParams, context: ToolContext) -> ToolResult:
        shown = context.show(path)
        if _is_small(path):  # a thread hop costs more than reading a small file
            return ToolResult(_page(path, shown, args.offset, args.limit))
        return ToolResult(await asyncio.to_thread(_page, path, shown, args.offset, args.limit))

    async def run(self, args: ReadFileParams, context: ToolContext) -> ToolResult:
        return await self._read(context.resolve(args.path), args, context)
