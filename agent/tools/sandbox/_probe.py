"""Can this machine run the sandbox? One trial run per process, and the fix when it cannot.

A worker that cannot sandbox refuses `shell` (never runs it bare) with a message naming what
the operator must do. The trial runs bwrap exactly as a command would, with `true`, so every
part of the setup (binary, user namespaces, uid switch, mounts, limits) is exercised.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from dataclasses import replace
from functools import cache
from pathlib import Path

from agent.tools.sandbox._bwrap import launch
from agent.tools.sandbox._config import SandboxConfig, sandbox_user

PROBE_TIMEOUT_S = 10
FIX = (
    "install bubblewrap (Debian: apt-get install bubblewrap) and allow unprivileged user "
    "namespaces (sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0), "
    "or set SHELL_SANDBOX=off (unsafe: commands then see the worker's environment, files, "
    "processes and network)"
)
REACH_FIX = (
    "make every directory above the workspaces searchable by that uid (chmod o+x DIR), "
    "or set AGENT_WORKDIR under such directories"
)


def sandbox_problem(config: SandboxConfig) -> str | None:
    """Why the sandbox cannot run here (None when it can, or when it is off); cached per process."""
    if not config.enabled:
        return None
    return _probe(replace(config, network=False))  # the same answer with or without network


@cache
def _probe(config: SandboxConfig) -> str | None:
    if shutil.which(config.bwrap) is None:
        return f"bubblewrap is not installed: no executable {config.bwrap!r} found"
    trial = launch(config, "true", None, {})
    user = trial.user or (None, None)
    try:
        done = subprocess.run(
            trial.argv,
            env=trial.environment,
            cwd=trial.cwd,
            user=user[0],
            group=user[1],
            extra_groups=[] if trial.user else None,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"bwrap could not be started: {error}"
    if done.returncode == 0:
        return None
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return f"bwrap could not set up a sandbox: {lines[0] if lines else f'exit code {done.returncode}'}"


def bwrap_version(config: SandboxConfig) -> str:
    found = shutil.which(config.bwrap)
    if found is None:
        return config.bwrap
    try:
        done = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return found
    return f"{done.stdout.strip() or 'bwrap'} at {found}"


def workspace_problem(config: SandboxConfig, workspace: Path) -> str | None:
    """Why the sandbox's uid cannot reach `workspace` (bwrap binds it by path), else None."""
    user = sandbox_user(config)
    if user is None:
        return None
    blocked = _first_closed_directory(workspace, *user)
    if blocked is None:
        return None
    return f"the sandbox user (uid {user[0]}) cannot reach {workspace}: {blocked} is not searchable by it"


def _first_closed_directory(path: Path, uid: int, gid: int) -> Path | None:
    for directory in [*reversed(path.parents), path]:
        try:
            status = os.stat(directory)
        except OSError:
            return directory
        if status.st_uid == uid:
            bit = stat.S_IXUSR
        elif status.st_gid == gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not status.st_mode & bit:
            return directory
    return None
