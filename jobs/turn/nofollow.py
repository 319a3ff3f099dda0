"""Opening paths inside a session workspace one directory at a time, never through a symlink.

The agent writes its workspace freely (the shell tool included), so any directory or file in
it may be a symlink placed to send threadline's own process elsewhere: `.threadline/uploads`
pointing at `/etc`, or a file sent to the thread pointing at the worker's secrets. Resolving a
path and then opening it leaves a window to swap a component in between; walking directory
file descriptors with O_NOFOLLOW closes it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # NONBLOCK: a FIFO never hangs us
READ_CHUNK = 1024 * 1024


class UnsafePath(OSError):
    """The path leaves the workspace, passes through a symlink, or is not a regular file."""


def relative_parts(relative: str) -> list[str]:
    """The components of a workspace-relative path; UnsafePath for `..`, absolute paths and NULs."""
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if relative.startswith("/") or "\x00" in relative or ".." in parts or not parts:
        raise UnsafePath(f"{relative!r} is not a path inside the workspace")
    return parts


def open_directory(workspace: Path, parts: Sequence[str], *, create: bool = False) -> int:
    """A descriptor of workspace/parts…, each a real directory (made when `create`, owned like the
    workspace). The caller closes it."""
    fd = os.open(workspace, _DIR_FLAGS)
    try:
        for part in parts:
            if create:
                _make_directory(workspace, fd, part)
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                raise UnsafePath(f"{part} is not a directory of the workspace ({error.strerror})") from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _make_directory(workspace: Path, parent_fd: int, name: str) -> None:
    try:
        os.mkdir(name, 0o755, dir_fd=parent_fd)
    except FileExistsError:
        return
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    try:
        give_fd_to_workspace_owner(workspace, fd)
    finally:
        os.close(fd)


def give_fd_to_workspace_owner(workspace: Path, fd: int) -> None:
    """What threadline makes in a workspace belongs to its owner (the sandbox uid when the worker
    is root), so the agent's shell can change it; see agent.tools.workspace."""
    if os.geteuid() != 0:
        return
    owner = os.stat(workspace)
    os.fchown(fd, owner.st_uid, owner.st_gid)


def read_regular_file(workspace: Path, relative: str, max_bytes: int) -> bytes:
    """The bytes of a regular file inside the workspace; UnsafePath if it is anything else, and
    ValueError when it holds more than `max_bytes`."""
    parts = relative_parts(relative)
    directory = open_directory(workspace, parts[:-1])
    try:
        try:
            fd = os.open(parts[-1], _READ_FLAGS, dir_fd=directory)
        except OSError as error:
            raise UnsafePath(f"{relative} cannot be opened ({error.strerror})") from None
    finally:
        os.close(directory)
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(f"{relative} is not a regular file")
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{relative} is larger than {max_bytes:,} bytes")
    return data
