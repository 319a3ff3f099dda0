"""Walking a workspace's tree from a directory descriptor, never through a link (glob, grep).

`os.fwalk` lists a directory, hands it to the caller, and only then opens each subdirectory by
name without O_NOFOLLOW: in between, the agent's shell can swap one for a link out of the
workspace or a FIFO, which the walk would then follow or block on for ever. This walk opens
each subdirectory with O_NOFOLLOW | O_DIRECTORY | O_NONBLOCK from its parent's descriptor, so
what was swapped is skipped, and it holds a descriptor only for the directories still to be
entered, at most MAX_WALK_DEPTH deep.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

_CHILD_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# Each level holds one descriptor while its subdirectories are walked: a tree 3,000 deep must not
# exhaust the worker's descriptors (deeper directories are listed, not entered).
MAX_WALK_DEPTH = 64


@dataclass
class _Parent:
    """A directory of a walk kept open until each subdirectory due to be entered is opened."""

    fd: int
    pending: int

    def opened_one(self) -> None:
        self.pending -= 1
        if self.pending <= 0:
            os.close(self.fd)


@dataclass
class Level:
    """One directory of a walk: its path from the walk's top (`""` for the top, else ending in
    `/`), its subdirectories (the caller may remove names to leave them out), its other entries
    (files, links, special files: never followed), and its descriptor, valid until the next one."""

    path: str
    directories: list[str]
    others: list[str]
    fd: int


def walk(top: int, max_depth: int = MAX_WALK_DEPTH) -> Iterator[Level]:
    """Every directory under the open directory `top`, depth first, in name order.

    Unlike `os.fwalk`, a subdirectory is opened with O_NOFOLLOW | O_DIRECTORY | O_NONBLOCK from
    its parent's descriptor: one swapped for a link, a FIFO or a file since it was listed is
    skipped, never followed or waited on, and only the directories still to be entered hold a
    descriptor (all closed when the caller stops early)."""
    pending: list[tuple[_Parent | None, str, str, int]] = [(None, "", "", 0)]
    try:
        while pending:
            parent, name, path, depth = pending.pop()
            fd = _enter(top, parent, name)
            if fd is None:
                continue
            kept = False
            try:
                level = _listed(fd, path)
                yield level
                children = [] if depth >= max_depth else level.directories
                if children:
                    shared = _Parent(fd, len(children))
                    pending.extend(
                        (shared, child, f"{path}{child}/", depth + 1) for child in reversed(children)
                    )
                    kept = True
            finally:
                if not kept:
                    os.close(fd)
    finally:
        for still_open in {id(entry[0]): entry[0] for entry in pending if entry[0] is not None}.values():
            os.close(still_open.fd)


def _enter(top: int, parent: _Parent | None, name: str) -> int | None:
    if parent is None:
        return os.dup(top)
    try:
        return os.open(name, _CHILD_DIR_FLAGS, dir_fd=parent.fd)
    except OSError:
        return None  # replaced since it was listed (a link, a FIFO, a file) or gone
    finally:
        parent.opened_one()


def _listed(fd: int, path: str) -> Level:
    directories: list[str] = []
    others: list[str] = []
    try:
        with os.scandir(fd) as entries:  # no entry is opened or followed to tell its kind
            for entry in entries:
                (directories if entry.is_dir(follow_symlinks=False) else others).append(entry.name)
    except OSError:
        pass  # unreadable: walked as empty
    return Level(path, sorted(directories), sorted(others), fd)
