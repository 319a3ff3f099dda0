"""Small helpers the file tools share."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agent.tools.defaults import BINARY_SNIFF_BYTES


class Params(BaseModel):
    """Base of every built-in parameter model: unknown arguments are an error, not ignored."""

    model_config = ConfigDict(extra="forbid")


class ToolError(Exception):
    """A clear, expected failure; the executor shows its message to the model."""


def looks_binary(path: Path) -> bool:
    with path.open("rb") as handle:
        return b"\x00" in handle.read(BINARY_SNIFF_BYTES)


def require_file(path: Path, shown: str) -> None:
    if not path.exists():
        raise ToolError(f"File not found: {shown}")
    if path.is_dir():
        raise ToolError(f"{shown} is a directory, not a file; use list_dir to see its entries.")


def require_text_file(path: Path, shown: str) -> None:
    require_file(path, shown)
    if looks_binary(path):
        raise ToolError(
            f"{shown} looks like a binary file (it contains NUL bytes); only text files can be read."
        )
