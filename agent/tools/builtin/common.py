"""Small helpers the file tools share: parameters, the error the model reads, opening a file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agent.tools import workspace as ws
from agent.tools.defaults import BINARY_SNIFF_BYTES


class Params(BaseModel):
    """Base of every built-in parameter model: unknown arguments are an error, not ignored."""

    model_config = ConfigDict(extra="forbid")


class ToolError(Exception):
    """A clear, expected failure; the executor shows its message to the model."""


@contextmanager
def said_to_the_model(shown: str, missing: str = "File not found: {shown}") -> Iterator[None]:
    """What opening a workspace path can meet, as a ToolError the model reads."""
    try:
        yield
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(missing.format(shown=shown)) from None
    except (ws.PathSecurityError, ws.NotAFileOrDirectory) as error:
        raise ToolError(str(error)) from None
    except OSError as error:
        raise ToolError(f"{shown} cannot be opened ({error.strerror or error}).") from None


def open_file(workspace: Path, path: Path, shown: str) -> ws.Opened:
    """The regular file at `path`, open (the caller closes it); a ToolError otherwise."""
    with said_to_the_model(shown):
        opened = ws.open_entry(workspace, path)
    if opened.is_directory:
        opened.close()
        raise ToolError(f"{shown} is a directory, not a file; use list_dir to see its entries.")
    return opened


def looks_binary_data(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def binary_text(shown: str) -> str:
    return f"{shown} looks like a binary file (it contains NUL bytes); only text files can be read."


def require_text(fd: int, shown: str) -> None:
    if looks_binary_data(os.pread(fd, BINARY_SNIFF_BYTES, 0)):
        raise ToolError(binary_text(shown))
