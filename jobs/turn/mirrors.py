"""One object store per repository: the sessions of a repository channel share it.

Each session's workspace is a clone of CHANNEL_REPOS[channel] made with `git clone --reference`
against a bare mirror of the repository, AGENT_WORKDIR/.mirrors/<digest> (16 hex digits of the
URL's SHA-1, so no token ever names a path). The clone borrows the mirror's objects through
`.git/objects/info/alternates` and stores only what the session adds; ten sessions hold the
history once. The mirror is made once and fetched before each new clone, under a file lock so
two workers never write it together. It never forgets an object a workspace may borrow: fetches
do not prune and git's automatic gc is off in it. Retention removes workspaces, never mirrors.
The shell sandbox binds the mirror read-only (jobs/turn/sandbox.py), so git works inside it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from agent.redaction import redact_text, redact_url
from jobs.forge.api import ForgeToken
from jobs.forge.git import auth_environment
from jobs.settings import Settings

MIRRORS_DIR = ".mirrors"
GIT_TIMEOUT_S = 600  # a large repository over a slow link; a turn has an hour
# A mirror must keep every object some workspace borrows: no automatic gc, no pruning.
MIRROR_CONFIG = (("gc.auto", "0"), ("maintenance.auto", "false"), ("gc.pruneExpire", "never"))


def mirror_path(settings: Settings, repository: str) -> Path:
    digest = hashlib.sha1(repository.encode()).hexdigest()[:16]
    return settings.AGENT_WORKDIR.resolve() / MIRRORS_DIR / digest


def channel_mirror(settings: Settings, channel: str | None) -> Path | None:
    """The mirror a session in `channel` borrows objects from, if its channel has a repository."""
    channel_repo = settings.CHANNEL_REPOS.get(channel) if channel is not None else None
    repository = channel_repo.url if channel_repo is not None else None
    return None if repository is None else mirror_path(settings, repository)


def refresh_mirror(
    settings: Settings, repository: str, token: ForgeToken | None = None
) -> tuple[Path, str | None]:
    """Make or fetch the repository's mirror; the mirror and why it failed (None: it did not)."""
    mirror = mirror_path(settings, repository)
    mirror.parent.mkdir(parents=True, exist_ok=True)
    with _locked(mirror.with_name(mirror.name + ".lock")):
        if mirror.is_dir():
            return mirror, run_git(["-C", str(mirror), "fetch", "--quiet", "origin"], repository, token)
        partial = mirror.with_name(mirror.name + ".cloning")
        shutil.rmtree(partial, ignore_errors=True)  # left by a worker that died mid-clone
        failure = run_git(["clone", "--quiet", "--mirror", repository, str(partial)], repository, token)
        for name, value in MIRROR_CONFIG if failure is None else ():
            failure = failure or run_git(["-C", str(partial), "config", name, value], repository)
        if failure is None:
            partial.rename(mirror)
        return mirror, failure


def run_git(arguments: list[str], repository: str, token: ForgeToken | None = None) -> str | None:
    """None when git succeeded, else why not (redacted). Returned, not raised: git's error names
    the command, token and all, and must not ride along as an exception's context. A forge's
    `token` reaches this one git process only (jobs.forge.git.auth_environment)."""
    # No terminal: a repository that wants credentials fails at once instead of waiting for input.
    environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **auth_environment(token)}
    try:
        subprocess.run(
            ["git", *arguments], check=True, capture_output=True, text=True, timeout=GIT_TIMEOUT_S,
            env=environment,
        )  # fmt: skip
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, FileNotFoundError) as error:
        return _why(error, repository)
    return None


def _why(error: Exception, repository: str) -> str:
    """git's complaint, with any URL in it (and the repository as given) redacted."""
    if isinstance(error, FileNotFoundError):
        return "git is not installed on the worker"
    if isinstance(error, subprocess.TimeoutExpired):
        return f"git did not finish within {GIT_TIMEOUT_S} s"
    stderr = (getattr(error, "stderr", None) or "").strip()
    if repository:  # git may repeat the URL as given, query string and all
        stderr = stderr.replace(repository, redact_url(repository))
    return redact_text(stderr)[:300] or f"git exited with {getattr(error, 'returncode', '?')}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
