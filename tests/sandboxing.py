"""Test helpers for the shell sandbox: reachable temp directories, and sandboxed processes seen from the host.

A root test run's sandboxed shell runs as SHELL_SANDBOX_UID, and bwrap binds a workspace by
path, so every directory above a test's workspace must be searchable by that uid; pytest makes
its temporary directories 0700. Inside the sandbox `$$` is a pid of its own PID namespace, so
tests find a command's processes on the host by a marker in their command line instead.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from pathlib import Path

from jobs.keys import SessionKey


def open_for_the_sandbox(path: Path) -> Path:
    """Let other uids traverse (not list) `path` and its parents; nothing to do unless root."""
    if os.geteuid() != 0:
        return path
    for directory in [path, *path.parents]:
        mode = directory.stat().st_mode
        if not mode & stat.S_IXOTH:
            directory.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
    return path


def sleep_marker() -> str:
    """A sleep duration no other test uses: `sleep {marker}` is findable on the host."""
    return f"600.{uuid.uuid4().int % 10**9:09d}"


def host_pids(marker: str) -> list[int]:
    """Pids of live (not zombie) `sleep {marker}` processes, wherever they run."""
    wanted = b"sleep\x00" + marker.encode() + b"\x00"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            zombie = "State:\tZ" in (entry / "status").read_text()
            if (entry / "cmdline").read_bytes() == wanted and not zombie:
                found.append(int(entry.name))
    return found


def give_to_sandbox(workspace: Path, uid: int = 65534) -> Path:
    """Hand a test's workspace to the sandbox's uid, as jobs/turn/workspace.py does for a root worker."""
    if os.geteuid() == 0:
        os.chown(open_for_the_sandbox(workspace), uid, uid)
    return workspace


def workspace_of(tmp_path: Path, key: SessionKey) -> Path:
    """The workspace of a session of a test's stack (AGENT_WORKDIR is tmp_path/workspaces)."""
    return tmp_path / "workspaces" / key.team / key.channel / key.thread_ts
