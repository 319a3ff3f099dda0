"""The session's workspace as a commit on the thread's branch, and its push.

The commit is a snapshot: the tree of the workspace's files (what `git add -A` sees, `.git`
left out) on top of the branch's head on the forge, or, before the first push, the commit the
workspace was cloned at (recorded by the worker at clone time, `record_base`). The
workspace's own history is never read: its commits, refs and configuration were written by
the sandbox. Links are stored as links, never followed. A branch whose head on the forge was
not pushed from this thread (its commit lacks the thread's trailer) is left alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from jobs.forge.git import GitFailed, git

TRAILER = "Slack-Thread"


class BranchRefused(Exception):
    """Why the branch cannot be pushed, in words for the model and the thread."""


@dataclass(frozen=True)
class Snapshot:
    parent: str
    tree: str
    stat: str  # `git diff --stat` of the parent and the tree ("" when nothing changed)
    on_forge: bool  # the branch already exists on the forge (parent is its head)
    total_stat: str  # `git diff --stat` of the clone's base and the tree: the whole pull request

    @property
    def changed(self) -> bool:
        return bool(self.stat)


@dataclass(frozen=True)
class Target:
    url: str  # the repository's clone URL (the channel's CHANNEL_REPOS entry)
    branch: str  # threadline/…
    token: str | None


def base_file(workspace: Path) -> Path:
    """Where the commit a workspace was cloned at is kept: beside it, out of the sandbox."""
    return workspace.with_name(workspace.name + ".base")


def shadow_dir(workspace: Path) -> Path:
    """The worker's own bare repository for the workspace's commits."""
    return workspace.with_name(workspace.name + ".publish")


def record_base(workspace: Path, commit: str) -> None:
    base_file(workspace).write_text(commit + "\n")


def recorded_base(workspace: Path) -> str | None:
    try:
        return base_file(workspace).read_text().strip() or None
    except FileNotFoundError:
        return None


def take_snapshot(workspace: Path, mirror: Path, target: Target, thread: str) -> Snapshot:
    """The workspace's files as a tree on top of the branch's head (or the clone's base)."""
    shadow = _shadow(workspace, mirror)
    remote = _remote_head(shadow, target)
    base = recorded_base(workspace)
    if remote is not None:
        fetched = f"+refs/heads/{target.branch}:refs/forge/head"
        git(shadow, "fetch", "--quiet", "--no-tags", target.url, fetched, token=target.token)
        if f"{TRAILER}: {thread}" not in git(shadow, "log", "-1", "--format=%B", remote):
            raise BranchRefused(
                f"the branch {target.branch} on the forge has commits not pushed from this thread; "
                "it is left as it is"
            )
        parent = remote
    elif base is not None:
        parent = base
    else:
        raise BranchRefused(
            "this session's workspace was not cloned from the channel's repository by this version "
            "of threadline, so the commit its changes start from is unknown; start a new thread"
        )
    git(shadow, "read-tree", parent)
    git(shadow, "add", "--all", "--", ".", work_tree=workspace)
    tree = git(shadow, "write-tree").strip()
    stat = _stat(shadow, parent, tree)
    total = _stat(shadow, base, tree) if base is not None and base != parent else stat
    return Snapshot(parent=parent, tree=tree, stat=stat, on_forge=remote is not None, total_stat=total)


def _stat(shadow: Path, commit: str, tree: str) -> str:
    return git(shadow, "diff-tree", "--stat", "--summary", f"{commit}^{{tree}}", tree).strip()


def push_snapshot(
    workspace: Path, snapshot: Snapshot, target: Target, *, message: str, author: tuple[str, str]
) -> str:
    """Commit the snapshot and push it to the branch; the new head."""
    shadow = shadow_dir(workspace)
    name, email = author
    people = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }
    commit = git(
        shadow,
        "commit-tree",
        snapshot.tree,
        "-p",
        snapshot.parent,
        "-F",
        "-",
        environment=people,
        input_text=message,
    ).strip()
    try:
        git(
            shadow,
            "push",
            "--quiet",
            "--no-verify",
            target.url,
            f"{commit}:refs/heads/{target.branch}",
            token=target.token,
        )
    except GitFailed as failure:
        raise BranchRefused(push_refusal(failure.stderr, target.branch)) from None
    git(shadow, "update-ref", "refs/forge/head", commit)
    return commit


def push_refusal(stderr: str, branch: str) -> str:
    """git's complaint about a push, as what it means."""
    lowered = stderr.lower()
    if "protected branch" in lowered or "gh006" in lowered:
        return f"the forge's branch protection refused the push to {branch}: {stderr.splitlines()[0]}"
    if "403" in lowered or "write access" in lowered or "permission" in lowered:
        return "the token cannot push to this repository (it needs the contents=write right)"
    if "401" in lowered or "authentication" in lowered or "could not read username" in lowered:
        return "the forge did not accept the token (GITHUB_TOKEN missing, expired or revoked)"
    if "non-fast-forward" in lowered or "fetch first" in lowered or "stale info" in lowered:
        return f"someone else pushed to {branch} meanwhile; ask again to build on their commit"
    return f"the push to {branch} failed: {stderr.splitlines()[-1] if stderr else 'no reason given'}"


def _shadow(workspace: Path, mirror: Path) -> Path:
    """The worker's bare repository for this workspace, borrowing the channel mirror's objects."""
    shadow = shadow_dir(workspace)
    if not (shadow / "HEAD").exists():
        shadow.mkdir(parents=True, exist_ok=True)
        git(shadow, "init", "--quiet", "--bare", str(shadow))
    alternates = shadow / "objects" / "info" / "alternates"
    alternates.parent.mkdir(parents=True, exist_ok=True)
    alternates.write_text(str((mirror / "objects").resolve()) + os.linesep)
    return shadow


def _remote_head(shadow: Path, target: Target) -> str | None:
    try:
        found = git(
            shadow, "ls-remote", "--heads", target.url, f"refs/heads/{target.branch}", token=target.token
        )
    except GitFailed as failure:
        raise BranchRefused(push_refusal(failure.stderr, target.branch)) from None
    for line in found.splitlines():
        sha, _, ref = line.partition("\t")
        if ref == f"refs/heads/{target.branch}":
            return sha
    return None
