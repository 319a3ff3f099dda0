"""The one way into a session workspace for threadline's own process (context-core.md §4.2).

The file tools, the spill file, the skills loader, shared files and sent files run in the
worker, as the worker's user, outside the shell's sandbox, on a tree that the agent's shell and
any cloned repository write freely. So a path is never checked and then opened by name:

- a path the model gives is first placed in the workspace by its text alone (`place`):
  `..` or an absolute path that leaves is refused before anything runs;
- it is then opened from the workspace's directory descriptor (agent.tools._beneath), following
  only links that stay inside, and what was opened is checked with `fstat`: regular files and
  directories only (O_NONBLOCK, so a FIFO refuses rather than blocks);
- the tool reads, lists or writes through that descriptor. Writes go to a new file beside the
  target and are renamed over it, so a link or another name of the target is replaced, never
  written through.
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from agent.tools._beneath import MAX_LINKS, LeavesDirectory, open_beneath

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC  # links beneath: see _beneath
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
NEW_FILE_MODE = 0o644
PARTIAL_MODE = 0o600  # what a new file is until it is written and owned as it should be

_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
}


class PathSecurityError(Exception):
    """A path that leaves the session workspace; its message is shown to the model as it is."""


class NotAFileOrDirectory(Exception):
    """A FIFO, socket or device: refused, never opened for reading; the message is the model's."""


@lru_cache(maxsize=1024)
def real_root(workspace: Path) -> str:
    """The workspace with its own symlinks resolved (computed once per workspace path). The
    workspace's own path is threadline's, not the agent's: only what lies inside it is theirs."""
    return os.path.realpath(workspace)


def place(workspace: Path, raw: str) -> Path:
    """Where `raw` (relative, or absolute inside the workspace) lies, by its text alone.

    Nothing is looked up on disk: links are followed, or refused, only when the path is opened.
    """
    if "\x00" in raw:
        raise PathSecurityError(f'Path "{raw}" contains a NUL character.')
    root = real_root(workspace)
    placed = os.path.normpath(os.path.join(root, os.path.expanduser(raw) if raw.startswith("~") else raw))
    if placed != root and not placed.startswith(root.rstrip(os.sep) + os.sep):
        raise PathSecurityError(
            f'Path "{raw}" is a location outside the session workspace. '
            "Tools can only use paths inside the workspace; use a path relative to it."
        )
    return Path(placed)


def show(workspace: Path, path: Path) -> str:
    """The workspace-relative form of a placed path, for messages and listings."""
    relative = os.path.relpath(path, real_root(workspace))
    return "." if relative == "." else Path(relative).as_posix()


def _leaves(shown: str) -> PathSecurityError:
    return PathSecurityError(
        f'Path "{shown}" resolves through a symbolic link to a location outside the session workspace. '
        "Tools can only use paths inside the workspace; use a path relative to it."
    )


def _relative(workspace: Path, path: Path | str) -> str:
    """`path` relative to the workspace (which it may name by its real path or as given)."""
    if not os.path.isabs(path):
        return str(path)
    for base in (real_root(workspace), os.path.abspath(workspace)):
        relative = os.path.relpath(path, base)
        if relative != ".." and not relative.startswith("../"):
            return relative
    raise PathSecurityError(f'Path "{path}" is a location outside the session workspace.')


def _open_root(workspace: Path) -> int:
    return os.open(real_root(workspace), _ROOT_FLAGS)


def _open_from_root(workspace: Path, relative: str, flags: int) -> int:
    root = _open_root(workspace)
    try:
        return open_beneath(root, relative, flags)
    except LeavesDirectory:
        raise _leaves(relative) from None
    finally:
        os.close(root)


@dataclass
class Opened:
    """A file or directory of the workspace, open; the caller closes it (or uses `with`)."""

    fd: int
    info: os.stat_result

    @property
    def is_directory(self) -> bool:
        return stat.S_ISDIR(self.info.st_mode)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def checked(fd: int, shown: str) -> Opened:
    """`fd` kept when it is a regular file or a directory; closed and refused otherwise."""
    info = os.fstat(fd)
    kind = _KINDS.get(stat.S_IFMT(info.st_mode))
    if kind is None:
        return Opened(fd, info)
    os.close(fd)
    raise NotAFileOrDirectory(f"{shown} is {kind}, not a regular file or directory; it is not opened.")


def open_entry(workspace: Path, path: Path | str) -> Opened:
    """The regular file or directory at `path`; FileNotFoundError, PathSecurityError,
    NotAFileOrDirectory, or the OSError the open met."""
    relative = _relative(workspace, path)
    return checked(_open_from_root(workspace, relative, _OPEN_FLAGS), relative)


def open_directory(workspace: Path, path: Path | str, *, create: bool = False) -> int:
    """A descriptor of the directory at `path`, made (with its parents, owned like the workspace)
    when `create` and missing. The caller closes it."""
    relative = _relative(workspace, path)
    try:
        return _open_from_root(workspace, relative, _DIRECTORY_FLAGS)
    except FileNotFoundError:
        if not create:
            raise
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    fd = _open_root(workspace)
    try:
        for depth, part in enumerate(parts):
            _make_directory(workspace, fd, part)
            os.close(fd)
            fd = -1
            fd = _open_from_root(workspace, "/".join(parts[: depth + 1]), _DIRECTORY_FLAGS)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise
    return fd


def _make_directory(workspace: Path, parent: int, name: str) -> None:
    try:
        os.mkdir(name, 0o755, dir_fd=parent)
    except FileExistsError:
        return
    fd = os.open(name, _ROOT_FLAGS, dir_fd=parent)
    try:
        give_fd_to_workspace_owner(workspace, fd)
    finally:
        os.close(fd)


def give_fd_to_workspace_owner(workspace: Path, fd: int) -> None:
    """What threadline makes in a workspace belongs to its owner: a root worker's shell commands
    run as the sandbox's unprivileged uid, which owns the workspace and must be able to change
    what the file tools wrote."""
    if os.geteuid() != 0:
        return
    owner = os.stat(real_root(workspace))
    os.fchown(fd, owner.st_uid, owner.st_gid)


def read_bytes(workspace: Path, path: Path | str, max_bytes: int) -> bytes:
    """The bytes of the regular file at `path`; IsADirectoryError for a directory, ValueError
    when it holds more than `max_bytes`."""
    relative = _relative(workspace, path)
    with open_entry(workspace, relative) as opened:
        if opened.is_directory:
            raise IsADirectoryError(f"{relative} is a directory")
        return read_at_most(opened.fd, max_bytes, relative)


def read_at_most(fd: int, max_bytes: int, shown: str) -> bytes:
    chunks: list[bytes] = []
    left = max_bytes + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1024 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise ValueError(f"{shown} is larger than {max_bytes:,} bytes")
    return data


@dataclass(frozen=True)
class Written:
    created: bool  # no file was there before


def write_bytes(workspace: Path, path: Path | str, data: bytes) -> Written:
    """Create or replace the file at `path` with `data`, making missing parent directories."""
    return _through_final_links(workspace, path, lambda relative: _write_once(workspace, relative, data))


def edit_bytes(
    workspace: Path, path: Path | str, change: Callable[[bytes], bytes], max_bytes: int
) -> Written:
    """Replace the existing file at `path` with `change(its bytes)`; ValueError over `max_bytes`."""
    return _through_final_links(
        workspace, path, lambda relative: _edit_once(workspace, relative, change, max_bytes)
    )


def _write_once(workspace: Path, relative: str, data: bytes) -> Written:
    with _in_parent(workspace, relative, create=True) as (directory, name, shown):
        try:
            with _open_at(directory, name, shown) as old:
                info: os.stat_result | None = old.info
        except FileNotFoundError:
            info = None
        _replace(workspace, directory, name, data, info)
        return Written(created=info is None)


def _edit_once(workspace: Path, relative: str, change: Callable[[bytes], bytes], max_bytes: int) -> Written:
    with _in_parent(workspace, relative, create=False) as (directory, name, shown):
        with _open_at(directory, name, shown) as old:
            data = change(read_at_most(old.fd, max_bytes, shown))
        _replace(workspace, directory, name, data, old.info)
        return Written(created=False)


class _FinalLink(Exception):
    """The file to write is a link: the write goes to where it points, if that is inside."""

    def __init__(self, target: str) -> None:
        super().__init__(target)
        self.target = target


def _through_final_links(workspace: Path, path: Path | str, attempt: Callable[[str], Written]) -> Written:
    """`attempt(relative)`, and again at a link's target while the file is a link that stays in
    the workspace (a repository's `AGENTS.md -> docs/agents.md`). The target replaces the link's
    name by its text alone, then is opened the one way in like any path."""
    relative = shown = _relative(workspace, path)
    for _ in range(MAX_LINKS):
        try:
            return attempt(relative)
        except _FinalLink as link:
            relative = _link_destination(relative, link.target, shown)
    raise OSError(errno.ELOOP, "too many links", shown)


def _link_destination(relative: str, target: str, shown: str) -> str:
    destination = os.path.normpath(os.path.join(os.path.dirname(relative), target))
    if target.startswith("/") or destination == ".." or destination.startswith("../"):
        raise _leaves(shown)
    return destination


@contextmanager
def _in_parent(workspace: Path, relative: str, *, create: bool) -> Iterator[tuple[int, str, str]]:
    """The parent directory's descriptor, the file's name and its shown path. The parent is opened
    like any path; the file itself is never followed (see `_open_at`)."""
    parent, _, name = relative.rpartition("/")
    if name in ("", ".", ".."):
        raise IsADirectoryError(f"{relative} is a directory")
    directory = open_directory(workspace, parent, create=create)
    try:
        yield directory, name, relative
    finally:
        os.close(directory)


def _open_at(directory: int, name: str, shown: str) -> Opened:
    """The regular file `name` in `directory`, never through a link: a write through one would
    land wherever it points; `_FinalLink` hands its text to `_through_final_links`."""
    try:
        fd = os.open(name, _OPEN_FLAGS | os.O_NOFOLLOW, dir_fd=directory)
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise _FinalLink(os.readlink(name, dir_fd=directory)) from None
    opened = checked(fd, shown)
    if opened.is_directory:
        opened.close()
        raise IsADirectoryError(f"{shown} is a directory")
    return opened


def _replace(workspace: Path, directory: int, name: str, data: bytes, old: os.stat_result | None) -> None:
    """`data` written to a new file beside `name` and renamed over it. The new file is private
    (PARTIAL_MODE) until it is written and owned as it should be; then it takes the old file's
    permission bits, never a setuid, setgid or sticky bit (a root worker writes these bytes)."""
    partial = f".{name[:100]}.{uuid.uuid4().hex[:12]}.partial"
    mode = (stat.S_IMODE(old.st_mode) if old is not None else NEW_FILE_MODE) & 0o777
    fd = os.open(partial, _NEW_FILE_FLAGS, PARTIAL_MODE, dir_fd=directory)
    try:
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(data)
        if old is not None and os.geteuid() == 0:
            os.fchown(fd, old.st_uid, old.st_gid)
        else:
            give_fd_to_workspace_owner(workspace, fd)
        os.fchmod(fd, mode)
        os.replace(partial, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        os.unlink(partial, dir_fd=directory)
        raise
    finally:
        os.close(fd)
