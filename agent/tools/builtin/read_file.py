"""read_file: a page of a text file, with line numbers."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pydantic import Field

from agent.offload import in_thread
from agent.tools import accesses as acc
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import (
    Params,
    ToolError,
    binary_text,
    looks_binary_data,
    open_file,
    require_text,
)
from agent.tools.defaults import (
    MAX_LINE_CHARS,
    READ_FILE_DEFAULT_LINES,
    READ_FILE_LINE_MAX_BYTES,
    READ_FILE_MAX_CHARS,
    READ_FILE_SCAN_MAX_BYTES,
    READ_INLINE_MAX_BYTES,
)
from agent.tools.output import cut_long_lines
from agent.tools.workspace import Opened

BEYOND_SCAN = (
    "{shown} is larger than {mib} MiB and offset {offset} lies beyond that part; read_file does not "
    "go that far. Use grep, or the shell (sed -n 'A,Bp'), for that part of the file."
)


class ReadFileParams(Params):
    path: str = Field(description="Path of the file, relative to the workspace (or absolute inside it).")
    offset: int = Field(default=1, ge=1, description="Line number to start at (1 is the first line).")
    limit: int = Field(
        default=READ_FILE_DEFAULT_LINES, ge=1, le=READ_FILE_DEFAULT_LINES, description="Most lines to return."
    )


def _lines(handle: BinaryIO) -> Iterator[tuple[bytes, int]]:
    """Each line (at most READ_FILE_LINE_MAX_BYTES of it) and the bytes read so far, until
    READ_FILE_SCAN_MAX_BYTES have been read: counted as read, skipped parts of long lines too,
    so a file that grows while it is read is still cut off there."""
    read = 0
    while read <= READ_FILE_SCAN_MAX_BYTES and (line := handle.readline(READ_FILE_LINE_MAX_BYTES)):
        read += len(line)
        while not line.endswith(b"\n") and len(line) == READ_FILE_LINE_MAX_BYTES:
            rest = handle.readline(READ_FILE_LINE_MAX_BYTES)  # the rest of a long line: skipped
            read += len(rest)
            if not rest or rest.endswith(b"\n") or read > READ_FILE_SCAN_MAX_BYTES:
                break
        yield line, read


def _numbered(number: int, line: bytes) -> str:
    text = line.decode("utf-8", errors="replace").rstrip("\n").removesuffix("\r")
    return f"{number:>6}\t{cut_long_lines(text, MAX_LINE_CHARS)}"


def _page(handle: BinaryIO, shown: str, offset: int, limit: int) -> str:
    lines: list[str] = []
    size = total = 0
    counted_all = True
    for number, (line, read) in enumerate(_lines(handle), start=1):
        total = number
        if read > READ_FILE_SCAN_MAX_BYTES and number > offset:
            counted_all = False
            break
        if number < offset or len(lines) >= limit or size > READ_FILE_MAX_CHARS:
            if read > READ_FILE_SCAN_MAX_BYTES:
                raise ToolError(
                    BEYOND_SCAN.format(shown=shown, mib=READ_FILE_SCAN_MAX_BYTES >> 20, offset=offset)
                )
            continue
        numbered = _numbered(number, line)
        if size + len(numbered) > READ_FILE_MAX_CHARS and lines:
            size = READ_FILE_MAX_CHARS + 1  # page full: count the rest only
            continue
        lines.append(numbered)
        size += len(numbered) + 1
    return _with_footer(lines, shown, offset, total, counted_all)


def _with_footer(lines: list[str], shown: str, offset: int, total: int, counted_all: bool) -> str:
    if total == 0:
        return f"{shown} is empty."
    if offset > total:
        raise ToolError(f"{shown} has {total} lines; offset {offset} is past the end.")
    last = offset + len(lines) - 1
    if not counted_all:
        mib = READ_FILE_SCAN_MAX_BYTES >> 20
        return "\n".join(
            [
                *lines,
                f"[Lines {offset}-{last}; lines past the first {mib} MiB are not counted. "
                f"Continue with offset={last + 1}.]",
            ]
        )
    if offset == 1 and last == total:
        return "\n".join(lines)
    more = f" Continue with offset={last + 1}." if last < total else ""
    return "\n".join([*lines, f"[Lines {offset}-{last} of {total}.{more}]"])


def _read(workspace: Path, path: Path, shown: str, args: ReadFileParams) -> str:
    """The page asked for. Off the turns' loop (agent.offload): a path on a slow or hung mount
    blocks one lane thread, never the other turns."""
    with open_file(workspace, path, shown) as opened:
        data = _small(opened)
        if data is not None:
            if looks_binary_data(data):
                raise ToolError(binary_text(shown))
            return _page(io.BytesIO(data), shown, args.offset, args.limit)
        require_text(opened.fd, shown)
        with os.fdopen(opened.fd, "rb", closefd=False) as handle:
            return _page(handle, shown, args.offset, args.limit)


def _small(opened: Opened) -> bytes | None:
    """All of a small file, read in one call (at most READ_INLINE_MAX_BYTES, whatever it grew to)."""
    if opened.info.st_size > READ_INLINE_MAX_BYTES:
        return None
    data = os.pread(opened.fd, READ_INLINE_MAX_BYTES + 1, 0)
    return data if len(data) <= READ_INLINE_MAX_BYTES else None


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
        return ToolResult(await in_thread(_read, context.workspace, path, shown, args))

    async def run(self, args: ReadFileParams, context: ToolContext) -> ToolResult:
        return await self._read(context.resolve(args.path), args, context)
