"""The built-in tools: files, search, shell, the web, and sending a file to the conversation."""

from __future__ import annotations

from typing import Any

from agent.tools.base import Tool
from agent.tools.builtin._edit_file import EditFile
from agent.tools.builtin._glob import Glob
from agent.tools.builtin._grep import Grep
from agent.tools.builtin._list_dir import ListDir
from agent.tools.builtin.http_get import HttpGet
from agent.tools.builtin.read_file import ReadFile
from agent.tools.builtin.send_file import FileSender, SendFile
from agent.tools.builtin.shell import Shell
from agent.tools.builtin.write_file import WriteFile


def builtin_tools() -> list[Tool[Any]]:
    """The tools that need nothing but a workspace (send_file needs a conversation: its caller adds it)."""
    return [ReadFile(), WriteFile(), EditFile(), ListDir(), Glob(), Grep(), Shell(), HttpGet()]


__all__ = [
    "EditFile",
    "FileSender",
    "Glob",
    "Grep",
    "HttpGet",
    "ListDir",
    "ReadFile",
    "SendFile",
    "Shell",
    "WriteFile",
    "builtin_tools",
]
