"""Keeping tool paths inside the session workspace, `..` and symlinks included.

See docs/context-core.md §4.2, step 6.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1024)
def real_root(workspace: Path) -> str:
    """The workspace with its own symlinks resolved (computed once per workspace path)."""
    return os.path.realpath(workspace)


class PathSecurityError(Exception):
    """A path that leaves the session workspace; its message is shown to the model as it is."""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


def resolve_in_workspace(workspace: Path, raw: str) -> Path:
    """The real path `raw` names (relative to the workspace, or absolute inside it).

    Symlinks are followed before the check, so a link inside the workspace that points out
    of it is refused like `../x` or `/etc/passwd`. The path itself need not exist yet.
    (Plain string operations: this runs for every path argument of every call.)
    """
    if "\x00" in raw:
        raise PathSecurityError(f'Path "{raw}" contains a NUL character.')
    root = real_root(workspace)
    candidate = os.path.join(root, os.path.expanduser(raw) if raw.startswith("~") else raw)
    resolved = os.path.realpath(candidate)
    if _inside(resolved, root):
        return Path(resolved)
    how = "resolves through a symlink to" if _inside(os.path.normpath(candidate), root) else "is"
    raise PathSecurityError(
        f'Path "{raw}" {how} a location outside the session workspace. '
        "Tools can only use paths inside the workspace; use a path relative to it."
    )


def display_path(workspace: Path, path: Path) -> str:
    """A workspace-relative form of a resolved path, for messages and listings."""
    root = Path(real_root(workspace))
    try:
        relative = path.relative_to(root)
    except ValueError:
        return str(path)
    return relative.as_posix() or "."


def give_to_workspace_owner(workspace: Path, *paths: Path) -> None:
    """Files and directories a tool creates in the workspace take the workspace's owner.

    Only a root worker changes owners: its shell commands run as the sandbox's unprivileged
    uid, which owns the workspace and must be able to change what the file tools wrote.
    """
    if os.geteuid() != 0 or not paths:
        return
    owner = os.stat(workspace)
    for path in paths:
        os.chown(path, owner.st_uid, owner.st_gid, follow_symlinks=False)


def missing_directories(directory: Path) -> list[Path]:
    """`directory` and its ancestors that do not exist yet, outermost first (what mkdir -p makes)."""
    missing: list[Path] = []
    for level in [directory, *directory.parents]:
        if level.exists():
            break
        missing.append(level)
    return missing[::-1]
