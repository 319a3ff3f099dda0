"""edit_file: replace an exact piece of text in a file."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from agent.offload import in_thread
from agent.tools import accesses as acc
from agent.tools import workspace as ws
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError, binary_text, looks_binary_data, said_to_the_model
from agent.tools.defaults import WRITE_FILE_MAX_BYTES


class EditFileParams(Params):
    path: str = Field(description="Path of the file, relative to the workspace (or absolute inside it).")
    old_text: str = Field(description="The exact text to replace, including whitespace and indentation.")
    new_text: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every occurrence instead of exactly one.")


def _edit(workspace: Path, path: Path, shown: str, args: EditFileParams) -> str:
    if not args.old_text:
        raise ToolError("old_text must not be empty; use write_file to create or overwrite a whole file.")
    if args.old_text == args.new_text:
        raise ToolError("old_text and new_text are the same; there is nothing to change.")
    replaced = 0

    def change(data: bytes) -> bytes:
        nonlocal replaced
        if looks_binary_data(data):
            raise ToolError(binary_text(shown))
        content = data.decode("utf-8", errors="surrogateescape")
        old, new = _in_the_files_line_ends(content, args.old_text, args.new_text)
        replaced = _count(content, old, shown, args.replace_all)
        return content.replace(old, new).encode("utf-8", errors="surrogateescape")

    with said_to_the_model(shown):
        try:
            ws.edit_bytes(workspace, path, change, WRITE_FILE_MAX_BYTES)
        except IsADirectoryError:
            raise ToolError(f"{shown} is a directory, not a file; use list_dir to see its entries.") from None
        except ValueError:
            raise ToolError(
                f"{shown} is larger than {WRITE_FILE_MAX_BYTES:,} bytes; edit it with the shell."
            ) from None
    return f"Replaced {replaced} occurrence{'s' if replaced > 1 else ''} in {shown}."


def _in_the_files_line_ends(content: str, old: str, new: str) -> tuple[str, str]:
    """read_file shows lines without their `\r`, so the model's old_text has `\n` line ends: in a
    file with `\r\n` ones, both texts are matched and written with those."""
    if old in content or "\r\n" not in content or "\n" not in old:
        return old, new
    return _crlf(old), _crlf(new)


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _count(content: str, old_text: str, shown: str, replace_all: bool) -> int:
    count = content.count(old_text)
    if count == 0:
        raise ToolError(
            f"old_text was not found in {shown}. It must match the file exactly, including whitespace "
            "and indentation; read the file to copy the text."
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_text occurs {count} times in {shown}; include more surrounding text so it matches "
            "exactly once, or set replace_all to true."
        )
    return count


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
        return ToolResult(await in_thread(_edit, context.workspace, path, context.show(path), args))

    async def run(self, args: EditFileParams, context: ToolContext) -> ToolResult:
        return await self._edit(context.resolve(args.path), args, context)
