"""The session workspace: AGENT_WORKDIR/<team>/<channel>/<thread_ts>/, created on first use.

A channel can be pointed at a codebase (CHANNEL_REPOS): the workspace of each new session in
that channel starts as a clone of the repository, borrowing its objects from the repository's
shared mirror (jobs/turn/mirrors.py). Its URL may carry a token (userinfo or a
query string), and a failed clone is reported in the thread: every URL shown there or in the
log, git's own stderr included, goes through `agent.redaction` first.

Every turn opens its workspace through `open_workspace`: a session notes the storage its
workspace was made on (jobs.storage), and a workspace that was made and is not here is never
made again, empty or freshly cloned: the turn stops and says why (a worker whose AGENT_WORKDIR
is not the shared storage, or files removed behind threadline's back).

When the worker runs as root, shell commands run as the sandbox's unprivileged uid
(SHELL_SANDBOX_UID), so the workspace, and everything in it, belongs to that uid; the file
tools keep new files with the workspace's owner (agent/tools/workspace.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
from pathlib import Path

from agent.redaction import redact_url
from agent.tools.sandbox import sandbox_user
from jobs.forge.api import ForgeRefused
from jobs.forge.branch import base_file, record_base, shadow_dir
from jobs.forge.git import GitFailed, git
from jobs.forge.tokens import forge_token
from jobs.keys import SessionKey
from jobs.session.meta import MetaHash
from jobs.settings import ChannelRepo, Settings
from jobs.storage import storage_id
from jobs.turn.mirrors import refresh_mirror, run_git
from jobs.turn.sandbox import shell_sandbox

log = logging.getLogger(__name__)


class WorkspaceError(RuntimeError):
    """The workspace could not be prepared; the message says what to fix."""


NOT_SHARED = (
    "this worker cannot see the session's files: AGENT_WORKDIR must be shared storage that every"
    " worker mounts. `!resume` tries again on whichever worker takes the turn."
)
GONE = (
    "the session's files are gone from AGENT_WORKDIR (removed outside threadline), and its turns"
    " cannot go on without them. Start a new thread to begin again."
)


def open_workspace(settings: Settings, meta: MetaHash) -> Path:
    """The workspace of `meta`'s session (a sub-agent tree's root), made on first use; one made
    before that this worker cannot find raises WorkspaceError instead of being made again."""
    here = storage_id(settings.AGENT_WORKDIR)
    made_on = meta.read().workspace
    path = workspace_path(settings, meta.session)
    if made_on is not None and not path.exists():
        log.error(
            "the workspace of %s was made on storage %s; this worker's AGENT_WORKDIR %s is storage %s"
            " and has no %s",
            meta.session, made_on, settings.AGENT_WORKDIR.resolve(), here, path,
        )  # fmt: skip
        raise WorkspaceError(GONE if made_on == here else NOT_SHARED)
    path = ensure_workspace(settings, meta.session)
    if made_on is None:
        meta.note_workspace(here)
    return path


def workspace_path(settings: Settings, key: SessionKey) -> Path:
    return settings.AGENT_WORKDIR.resolve() / key.team / key.channel / key.thread_ts


def ensure_workspace(settings: Settings, key: SessionKey) -> Path:
    path = workspace_path(settings, key)
    channel_repo = settings.CHANNEL_REPOS.get(key.channel)
    if not path.exists():
        if channel_repo is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            _clone(settings, channel_repo, path)
    owner = sandbox_user(shell_sandbox(settings))
    if owner is not None:
        hand_over(path, owner)
    return path


def remove_workspace(settings: Settings, key: SessionKey) -> int:
    """Delete the session's workspace (and a clone a dead worker left half done); returns the
    disk bytes it held. A symlink in it is removed, never followed (shutil.rmtree works through
    directory fds, so a link swapped in mid-way cannot lead it out); the worker runs as root when
    the sandbox's uid owns the files, and a directory the agent made read-only is opened first."""
    path = workspace_path(settings, key)
    # The team's and channel's directories stay: a new session there may be creating its own.
    beside = (path.with_name(path.name + ".cloning"), base_file(path), shadow_dir(path))
    return sum(_remove_tree(each) for each in (path, *beside))


def disk_bytes(path: Path) -> int:
    """What `du` counts under `path`, links counted as themselves."""
    total = 0
    for directory, subdirectories, files in os.walk(path):
        for name in [*subdirectories, *files]:
            total += _blocks(os.path.join(directory, name))
    return total + _blocks(str(path))


def _blocks(path: str) -> int:
    try:
        return os.lstat(path).st_blocks * 512
    except FileNotFoundError:
        return 0


def _remove_tree(path: Path) -> int:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return 0
    if not stat.S_ISDIR(info.st_mode):  # a link or a file where a workspace belongs: only it goes
        path.unlink()
        return info.st_blocks * 512
    size = disk_bytes(path)
    shutil.rmtree(path, onerror=_open_and_retry)
    return size


def _open_and_retry(function, path: str, _error: object) -> None:  # type: ignore[no-untyped-def]
    """A read-only directory stops a non-root worker: make it writable and try once more."""
    parent = os.path.dirname(path)
    os.chmod(parent, stat.S_IRWXU)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, stat.S_IRWXU)
    function(path)


def hand_over(path: Path, owner: tuple[int, int]) -> None:
    """Make `path` and everything under it belong to `owner` (a new workspace, a fresh clone, or
    one created before the sandbox was on); a workspace it already owns is left alone."""
    if path.stat().st_uid == owner[0]:
        return
    # Through directory descriptors (fwalk, which checks each directory it enters is the one it
    # listed): a root worker's chown never goes by a path. It runs before any sandbox has used
    # this tree (its owner is not the sandbox's yet), so nothing swaps directories under it; the
    # file tools' own walk (agent.tools.tree_walk) stops at 64 levels, which a clone may pass.
    for _directory, subdirectories, files, directory_fd in os.fwalk(path):
        for name in [*subdirectories, *files]:
            os.chown(name, *owner, dir_fd=directory_fd, follow_symlinks=False)
    os.chown(path, *owner, follow_symlinks=False)
    log.info("handed %s over to uid %d for the shell sandbox", path, owner[0])


def _clone(settings: Settings, channel_repo: ChannelRepo, path: Path) -> None:
    repository = channel_repo.url
    try:
        token = forge_token(settings, channel_repo)
    except ForgeRefused as refused:
        raise WorkspaceError(
            f"could not clone {redact_url(repository)} for this channel: {refused}"
        ) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".cloning")
    shutil.rmtree(partial, ignore_errors=True)  # left by a worker that died mid-clone
    mirror, failure = refresh_mirror(settings, repository, token)
    if failure is None:
        # --no-local: a repository given as a path would otherwise be copied (hard links on one
        # filesystem, a full copy across two) instead of borrowed from the mirror.
        arguments = ["clone", "--quiet", "--no-local", "--reference", str(mirror), repository, str(partial)]
        failure = run_git(arguments, repository, token)
    if failure is not None:
        raise WorkspaceError(f"could not clone {redact_url(repository)} for this channel: {failure}")
    # What a pull request's first commit starts from (jobs.forge.branch): read now, before the
    # sandbox may rewrite the clone's history.
    with contextlib.suppress(GitFailed):  # an empty repository: nothing to start from
        record_base(path, git(partial / ".git", "rev-parse", "--verify", "HEAD").strip())
    partial.rename(path)  # a crash mid-clone leaves no half workspace behind
    log.info("cloned %s into %s (objects shared with %s)", redact_url(repository), path, mirror)
