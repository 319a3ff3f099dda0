"""Keeping tool paths inside the session workspace, `..` and symlinks included (spec 4.2 step 6)."""

from __future__ import annotations

import os
from pathlib import Path


class PathSecurityError(Exception):
    """A path that leaves the session workspace; its message is shown to the model as it is."""


def resolve_in_workspace(workspace: Path, raw: str) -> Path:
    """The real path `raw` names (relative to the workspace, or absolute inside it).

    Symlinks are followed before the check, so a link inside the workspace that points out
    of it is refused like `../x` or `/etc/passwd`. The path itself need not exist yet.
    """
    if "\x00" in raw:
        raise PathSecurityError(f'Path "{raw}" contains a NUL character.')
    root = Path(os.path.realpath(workspace))
    candidate = Path(raw).expanduser() if raw.startswith("~") else Path(raw)
    if not candidate.is_absolute():
        candidate = root / candidate
    resolved = Path(os.path.realpath(candidate))
    if resolved == root or resolved.is_relative_to(root):
        return resolved
    through_link = Path(os.path.normpath(candidate)).is_relative_to(root)
    how = "resolves through a symlink to" if through_link else "is"
    raise PathSecurityError(
        f'Path "{raw}" {how} a location outside the session workspace. '
        "Tools can only use paths inside the workspace; use a path relative to it."
    )


def display_path(workspace: Path, path: Path) -> str:
    """A workspace-relative form of a resolved path, for messages and listings."""
    root = Path(os.path.realpath(workspace))
    try:
        relative = path.relative_to(root)
    except ValueError:
        return str(path)
    return relative.as_posix() or "."
