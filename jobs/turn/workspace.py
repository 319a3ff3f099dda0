"""The session workspace: AGENT_WORKDIR/<team>/<channel>/<thread_ts>/, created on first use.

A channel can be pointed at a codebase (CHANNEL_REPOS): the workspace of each new session in
that channel starts as a clone of the repository.

When the worker runs as root, shell commands run as the sandbox's unprivileged uid
(SHELL_SANDBOX_UID), so the workspace, and everything in it, belongs to that uid; the file
tools keep new files with the workspace's owner (agent/tools/workspace.py).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

from agent.tools.sandbox import sandbox_user
from jobs.keys import SessionKey
from jobs.settings import Settings
from jobs.turn.sandbox import shell_sandbox

log = logging.getLogger(__name__)

CLONE_TIMEOUT_S = 600  # a large repository over a slow link; a turn has an hour


class WorkspaceError(RuntimeError):
    """The workspace could not be prepared; the message says what to fix."""


def workspace_path(settings: Settings, key: SessionKey) -> Path:
    return settings.AGENT_WORKDIR.resolve() / key.team / key.channel / key.thread_ts


def ensure_workspace(settings: Settings, key: SessionKey) -> Path:
    path = workspace_path(settings, key)
    repository = settings.CHANNEL_REPOS.get(key.channel)
    if not path.exists():
        if repository is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            _clone(repository, path)
    owner = sandbox_user(shell_sandbox(settings))
    if owner is not None:
        hand_over(path, owner)
    return path


def hand_over(path: Path, owner: tuple[int, int]) -> None:
    """Make `path` and everything under it belong to `owner` (a new workspace, a fresh clone, or
    one created before the sandbox was on); a workspace it already owns is left alone."""
    if path.stat().st_uid == owner[0]:
        return
    for directory, subdirectories, files in os.walk(path):
        for name in [*subdirectories, *files]:
            os.chown(os.path.join(directory, name), *owner, follow_symlinks=False)
    os.chown(path, *owner)
    log.info("handed %s over to uid %d for the shell sandbox", path, owner[0])


def _clone(repository: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".cloning")
    shutil.rmtree(partial, ignore_errors=True)  # left by a worker that died mid-clone
    command = ["git", "clone", "--quiet", repository, str(partial)]
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=CLONE_TIMEOUT_S)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, FileNotFoundError) as error:
        detail = getattr(error, "stderr", None) or str(error)
        raise WorkspaceError(
            f"could not clone {repository} for this channel: {detail.strip()[:300]}"
        ) from error
    partial.rename(path)  # a crash mid-clone leaves no half workspace behind
    log.info("cloned %s into %s", repository, path)
