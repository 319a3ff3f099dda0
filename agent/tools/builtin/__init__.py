"""The built-in tools: files, search, shell and the web."""

from __future__ import annotations

from typing import Any

from agent.tools.base import Tool
from agent.tools.builtin._edit_file import EditFile
from agent.tools.builtin._glob import Glob
from agent.tools.builtin._grep import Grep
from agent.tools.builtin._list_dir import ListDir
from agent.tools.builtin.http_get import HttpGet
from agent.tools.builtin.read_file import ReadFile
from agent.tools.builtin.shell import Shell
from agent.tools.builtin.write_file import WriteFile


def builtin_tools() -> list[Tool[Any]]:
    return [ReadFile(), WriteFile(), EditFile(), ListDir(), Glob(), Grep(), Shell(), HttpGet()]


__all__ = [
    "EditFile",
    "Glob",
    "Grep",
    "HttpGet",
    "ListDir",
    "ReadFile",
    "Shell",
    "WriteFile",
    "builtin_tools",
]
