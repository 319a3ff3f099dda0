"""send_file: post a file of the workspace into the conversation (the Slack thread).

The tool only checks the file and hands it to a `FileSender`, which the caller binds per turn
(jobs/ puts a notice in the session's outbox; the delivery worker uploads it once). Without a
sender (a sub-agent, a test registry) the tool says it is not available.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pydantic import Field

from agent.offload import in_thread
from agent.tools import accesses as acc
from agent.tools import workspace as ws
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError, said_to_the_model

DEFAULT_MAX_BYTES = 20 * 1024 * 1024  # the caller passes its own limit (UPLOAD_MAX_BYTES)
MAX_TITLE_CHARS = 200  # Slack shows a title on one line
UNAVAILABLE = "send_file is not available here (no conversation to send to)."


class FileSender(Protocol):
    def send(self, path: str, title: str, size: int, call_id: str) -> None:
        """Queue the workspace file `path` (workspace-relative) for the conversation, once per call."""
        ...


class SendFileParams(Params):
    path: str = Field(description="Path of the file to send, relative to the workspace.")
    title: str = Field(default="", description="A short title shown with the file (default: its name).")


def _checked_size(workspace: Path, path: Path, shown: str, max_bytes: int) -> int:
    """The size of the regular file at `path`, opened the one way into the workspace. The
    delivery worker opens it the same way again when it reads it to upload (a file may change
    in between, so the delivery checks the size again)."""
    with said_to_the_model(shown, "{shown} does not exist."):
        opened = ws.open_entry(workspace, path)
    with opened:
        size = opened.info.st_size
        if opened.is_directory:
            raise ToolError(f"{shown} is not a regular file.")
    if size == 0:
        raise ToolError(f"{shown} is empty; there is nothing to send.")
    if size > max_bytes:
        raise ToolError(f"{shown} is {size:,} bytes; files over {max_bytes:,} bytes are not sent.")
    return size


class SendFile(Tool[SendFileParams]):
    name = "send_file"
    description = (
        "Send a file from the workspace to the people in the conversation (it appears in the thread "
        "as a file they can open or download). Use it for results they asked for as a file: a report, "
        "a patch, an image, an archive. Each call sends the file once."
    )
    parameters = SendFileParams

    def __init__(self, sender: FileSender | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.sender = sender
        self.max_bytes = max_bytes

    def unavailable_reason(self) -> str | None:
        return None if self.sender is not None else UNAVAILABLE

    def resolve_execution(self, args: SendFileParams, context: ToolContext) -> ToolExecution:
        path = context.resolve(args.path)
        return ToolExecution(run=lambda: self._send(path, args, context), accesses=acc.read_file(str(path)))

    async def _send(self, path: Path, args: SendFileParams, context: ToolContext) -> ToolResult:
        if self.sender is None:
            raise ToolError(UNAVAILABLE)
        shown = context.show(path)
        size = await in_thread(_checked_size, context.workspace, path, shown, self.max_bytes)
        title = " ".join(args.title.split())[:MAX_TITLE_CHARS] or path.name
        await in_thread(self.sender.send, shown, title, size, context.tool_call_id)
        return ToolResult(f"Sent {shown} ({size:,} bytes) to the thread as “{title}”; it shows there soon.")

    async def run(self, args: SendFileParams, context: ToolContext) -> ToolResult:
        return await self._send(context.resolve(args.path), args, context)
