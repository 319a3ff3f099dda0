"""The processes of a running sandbox, found from the host through /proc.

Inside its PID namespace every process descends from bwrap's init (pid 1 inside), which is the
child of the bwrap process we started: even a `setsid` or double-forked process is re-parented
to that init, never out of the tree. Signalling the init itself would tear the namespace down
at once (SIGKILL to all), so a graceful stop signals everything below it instead.
"""

from __future__ import annotations

import contextlib
from pathlib import Path


def processes_inside(bwrap_pid: int) -> list[int]:
    """Host pids of every process in the sandbox `bwrap_pid` runs, except its init."""
    children = _children_by_parent()
    return [pid for init in children.get(bwrap_pid, []) for pid in _below(init, children)]


def descendants(pid: int) -> list[int]:
    """Every process below `pid` on this host (read from /proc), in the order they are found."""
    return _below(pid, _children_by_parent())


def _below(pid: int, children: dict[int, list[int]]) -> list[int]:
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _children_by_parent() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(stat.parent.name))
    return children
