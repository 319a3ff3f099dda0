"""The session's workspace as a commit on the thread's branch, and its push.

The commit is a snapshot: the tree of the workspace's files (what `git add -A` sees, `.git`
left out) on top of the branch's head on the forge, or, before the first push, the commit the
workspace was cloned at (recorded by the worker at clone time, `record_base`). The
workspace's own history is not what is pushed: its commits, refs and configuration were written
by the sandbox. Links are stored as links, never followed. A branch whose head on the forge was
not pushed from this thread (its commit lacks the thread's trailer) is left alone.

When the base branch moved under the change and the forge reports a conflict, `offer_new_base`
brings the base's new head into the workspace as a bundle the sandbox fetches and rebases onto,
and records it as the base. The next push is then a merge of the branch's head and that base,
with the workspace's files as its tree, so the branch moves forward without a force push; it is
refused until the workspace's HEAD (read as text, never through git in the workspace) descends
from the new base, so a push cannot silently undo what the base gained.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG

from jobs.forge.api import ForgeToken
from jobs.forge.git import GitFailed, git

TRAILER = "Slack-Thread"
BASE_BUNDLE = ".threadline-base.bundle"  # in the workspace, for the sandbox to fetch; never pushed
SAFE_REF = re.compile(r"refs/heads/[A-Za-z0-9][A-Za-z0-9._/-]{0,200}")
SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
PACKED_REFS_MAX_BYTES = 8_000_000
ANCESTRY_S = 20  # at most, for asking git whether a commit descends from another


class BranchRefused(Exception):
    """Why the branch cannot be pushed, in words for the model and the thread."""


@dataclass(frozen=True)
class Snapshot:
    parent: str
    tree: str
    stat: str  # `git diff --stat` of the parent and the tree ("" when nothing changed)
    on_forge: bool  # the branch already exists on the forge (parent is its head)
    total_stat: str  # `git diff --stat` of the base and the tree: the whole pull request
    merged: str | None = None  # the base's new head, the commit's second parent

    @property
    def changed(self) -> bool:
        return bool(self.stat) or self.merged is not None


@dataclass(frozen=True)
class Target:
    url: str  # the repository's clone URL (the channel's CHANNEL_REPOS entry)
    branch: str  # threadline/…
    token: ForgeToken | None
    base: str  # the branch the pull request goes into


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
    merged = None
    if remote is not None:
        fetched = f"+refs/heads/{target.branch}:refs/forge/head"
        git(shadow, "fetch", "--quiet", "--no-tags", target.url, fetched, token=target.token)
        if f"{TRAILER}: {thread}" not in git(shadow, "log", "-1", "--format=%B", remote):
            raise BranchRefused(
                f"the branch {target.branch} on the forge has commits not pushed from this thread; "
                "it is left as it is"
            )
        parent = remote
        if base is not None and not _is_ancestor(shadow, base, remote):
            _require_built_on(workspace, shadow, base, target)
            merged = base
    elif base is not None:
        parent = base
    else:
        raise BranchRefused(
            "this session's workspace was not cloned from the channel's repository by this version "
            "of threadline, so the commit its changes start from is unknown; start a new thread"
        )
    git(shadow, "read-tree", parent)
    git(shadow, "add", "--all", "--", ".", f":(exclude){BASE_BUNDLE}", work_tree=workspace)
    tree = git(shadow, "write-tree").strip()
    stat = _stat(shadow, parent, tree)
    total = _stat(shadow, base, tree) if base is not None and base != parent else stat
    return Snapshot(parent, tree, stat, on_forge=remote is not None, total_stat=total, merged=merged)


def offer_new_base(workspace: Path, mirror: Path, target: Target) -> str | None:
    """The base branch's head on the forge, written into the workspace as `BASE_BUNDLE` and
    recorded as the base the next push builds on; None when the base has not moved."""
    shadow = _shadow(workspace, mirror)
    ref = f"refs/heads/{target.base}"
    git(shadow, "fetch", "--quiet", "--no-tags", target.url, f"+{ref}:{ref}", token=target.token)
    head = git(shadow, "rev-parse", "--verify", f"{ref}^{{commit}}").strip()
    old = recorded_base(workspace)
    if head == old:
        return None
    known = [f"^{old}"] if old is not None and _is_ancestor(shadow, old, head) else []
    bundle = shadow / "base.bundle"
    git(shadow, "bundle", "create", "--quiet", str(bundle), ref, *known)
    try:
        os.replace(bundle, workspace / BASE_BUNDLE)  # a link planted there is replaced, never followed
    except OSError as error:
        raise BranchRefused(f"could not put {BASE_BUNDLE} in the workspace: {error.strerror}") from None
    record_base(workspace, head)
    return head


def rebase_howto(base: str) -> str:
    return (
        f"in the workspace, commit what is not committed yet, then run `git fetch {BASE_BUNDLE} "
        f"+{base}:refs/remotes/origin/{base}` and `git rebase origin/{base}` (or merge it), resolve the "
        "conflicts, and call open_pull_request again"
    )


def _require_built_on(workspace: Path, shadow: Path, base: str, target: Target) -> None:
    head = workspace_head(workspace)
    # The workspace's objects are read as data, with a bound on the time: a planted FIFO or a
    # damaged object makes this refuse, nothing more.
    objects = {"GIT_ALTERNATE_OBJECT_DIRECTORIES": str(workspace / ".git" / "objects")}
    if head is None or not _is_ancestor(shadow, base, head, environment=objects):
        raise BranchRefused(
            f"the workspace does not build on {target.base}'s new head {base[:12]} yet, so the push "
            f"would undo what {target.base} gained: {rebase_howto(target.base)}"
        )


def workspace_head(workspace: Path) -> str | None:
    """The commit the workspace's HEAD names, read as text from its `.git` (a detached sha, or
    the branch it names, loose or packed); None when it names nothing readable."""
    git_dir = workspace / ".git"
    head = _small_file(git_dir / "HEAD", 4096)
    if head is None or not head.startswith("ref: "):
        return _sha(head)
    ref = head.removeprefix("ref: ").strip()
    if not SAFE_REF.fullmatch(ref) or ".." in ref:
        return None
    loose = _small_file(git_dir / ref, 4096)
    if loose is not None:
        return _sha(loose)
    for line in (_small_file(git_dir / "packed-refs", PACKED_REFS_MAX_BYTES) or "").splitlines():
        sha, _, name = line.partition(" ")
        if name == ref:
            return _sha(sha)
    return None


def _small_file(path: Path, limit: int) -> str | None:
    """A regular file's first `limit` bytes; a link, FIFO or device is not opened or not read."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as file:
        if not S_ISREG(os.fstat(descriptor).st_mode):
            return None
        return file.read(limit).decode(errors="replace")


def _sha(text: str | None) -> str | None:
    value = (text or "").strip()
    return value if SHA.fullmatch(value) else None


def _is_ancestor(shadow: Path, commit: str, descendant: str, environment: Mapping[str, str] = {}) -> bool:
    try:
        found = git(shadow, "merge-base", commit, descendant, environment=environment, timeout_s=ANCESTRY_S)
        return found.strip() == commit
    except GitFailed:
        return False  # no common history, or an object that is not there


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
        *(["-p", snapshot.merged] if snapshot.merged else []),
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
        return (
            "the token cannot push to this repository (on GitHub it needs the contents=write right; "
            "on GitLab the write_repository scope and at least the Developer role)"
        )
    if "401" in lowered or "authentication" in lowered or "could not read username" in lowered:
        return "the forge did not accept the token (missing, expired or revoked)"
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
