"""open_pull_request's port (agent.tools.builtin.pull_request.PullRequests) for one session.

The thread's branch is `threadline/<channel>-<thread ts>` (or `threadline/<name>` the model
chose for the first one); the pull request found on the forge for that branch is the thread's,
so a second call, a retry or a resume after a crash updates it rather than opening another.
What was opened is kept in Redis (jobs.forge.record) and shown in the thread as one card,
edited on each push and as the forge reports the pushed commit's CI (jobs.forge.ci_watch).
"""

from __future__ import annotations

import logging
from pathlib import Path

from agent.tools.builtin.common import ToolError
from jobs.forge.api import ForgeRefused
from jobs.forge.branch import (
    BASE_BUNDLE,
    BranchRefused,
    Snapshot,
    Target,
    offer_new_base,
    push_snapshot,
    rebase_howto,
    take_snapshot,
)
from jobs.forge.ci_watch import SETTLED_CI, schedule_ci_watch
from jobs.forge.forges import open_forge
from jobs.forge.git import GitFailed
from jobs.forge.record import PullRequestRecord, read_record, save_record, show_card
from jobs.forge.tokens import forge_token
from jobs.session.notices import PullRequestNotice, forge_noun
from jobs.session.store import SessionStore
from jobs.settings import ChannelRepo, Settings

log = logging.getLogger(__name__)

BRANCH_PREFIX = "threadline/"
NO_FORGE = (
    "this channel has no repository that takes pull requests. An admin maps the channel in "
    'CHANNEL_REPOS to {"url": ..., "forge": "github" (or "gitlab"), "repo": "owner/name"} and gives '
    "the forge a token (GITHUB_TOKEN or a GitHub App; GITLAB_TOKEN)."
)
NO_TOKEN = {
    "github": (
        "this channel's repository takes pull requests, but the forge has no token: an admin sets "
        "GITHUB_TOKEN, or GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY_FILE."
    ),
    "gitlab": (
        "this channel's repository takes merge requests, but the forge has no token: an admin sets "
        "GITLAB_TOKEN (scopes api and write_repository)."
    ),
}
TELL_THE_THREAD = "Tell the people in the thread."
PULL_FOOTER = "\n\n---\nOpened from a Slack thread by threadline."


class ForgePullRequests:
    def __init__(self, store: SessionStore, settings: Settings, workspace: Path, mirror: Path | None) -> None:
        """`mirror`: the channel repository's mirror the workspace was cloned with (jobs.turn.mirrors)."""
        self.store = store
        self.settings = settings
        self.workspace = workspace
        self.mirror = mirror

    def preview(self, branch: str | None) -> str:
        record = read_record(self.store)
        channel_repo, target = self._target(branch, record)
        snapshot = self._snapshot(channel_repo, target)
        self._refuse_if_unchanged(snapshot, record)
        if record:
            what = f"updates {record.card.noun} {record.card.reference}"
        else:
            what = f"opens a {forge_noun(channel_repo.forge)}"
        where = f"`{target.branch}` to {channel_repo.repo}, base `{channel_repo.base}`"
        merge = f", merging {channel_repo.base}'s new head {snapshot.merged[:12]}" if snapshot.merged else ""
        return f"Pushes {where}{merge}; {what}.\n{snapshot.stat}"

    def publish(self, title: str, body: str, branch: str | None) -> str:
        record = read_record(self.store)
        channel_repo, target = self._target(branch, record)
        snapshot = self._snapshot(channel_repo, target)
        self._refuse_if_unchanged(snapshot, record)
        head = snapshot.parent
        if snapshot.changed:
            head = self._push(snapshot, target, title, body)
        assert channel_repo.repo is not None and channel_repo.forge is not None  # checked by _target
        try:
            with open_forge(self.settings, channel_repo.forge, channel_repo.repo, target.token) as forge:
                found = forge.open_pull_for(target.branch)
                text = body + PULL_FOOTER
                if found is None:
                    pull = forge.open_pull(title=title, body=text, head=target.branch, base=channel_repo.base)
                else:
                    pull = forge.edit_pull(found.number, title=title, body=text)
                ci = forge.ci_state(head)
        except ForgeRefused as refused:
            raise ToolError(f"the branch {target.branch} was pushed, but {refused}") from None
        # Without a record, the branch was pushed now or by a run that died before recording it.
        pushes = record.card.pushes + int(snapshot.changed) if record else 1
        card = PullRequestNotice(
            forge=channel_repo.forge,
            repo=channel_repo.repo,
            number=pull.number,
            url=pull.url,
            title=title,
            branch=target.branch,
            base=channel_repo.base,
            stat=stat_line(snapshot.total_stat),
            ci=ci,
            conflicts=pull.conflicts,
            pushes=pushes,
        )
        self._show(PullRequestRecord(card=card, head=head))
        said = _said(card, found is None, snapshot)
        if card.conflicts:
            said += "\n" + self._offer_new_base(target)
        return said

    # -- steps ------------------------------------------------------------------------------

    def _target(self, branch: str | None, record: PullRequestRecord | None) -> tuple[ChannelRepo, Target]:
        """Where this call pushes: the thread's branch for good once it has a pull request."""
        channel_repo = self.settings.CHANNEL_REPOS.get(self.store.key.channel)
        if channel_repo is None or channel_repo.forge is None or channel_repo.repo is None:
            raise ToolError(NO_FORGE)
        if record is not None:
            name = record.card.branch
        elif branch:
            name = BRANCH_PREFIX + branch
        else:
            name = BRANCH_PREFIX + thread_branch(self.store.key.channel, self.store.key.thread_ts)
        try:
            token = forge_token(self.settings, channel_repo)
        except ForgeRefused as refused:
            raise ToolError(str(refused)) from None
        if token is None:
            raise ToolError(NO_TOKEN[channel_repo.forge])
        return channel_repo, Target(url=channel_repo.url, branch=name, token=token, base=channel_repo.base)

    def _snapshot(self, channel_repo: ChannelRepo, target: Target) -> Snapshot:
        assert self.mirror is not None  # a channel with a repository has its mirror
        try:
            return take_snapshot(self.workspace, self.mirror, target, thread=str(self.store.key))
        except BranchRefused as refused:
            raise ToolError(str(refused)) from None
        except GitFailed as failed:
            log.warning("%s: taking the workspace's snapshot failed: %s", self.store.key, failed.stderr)
            raise ToolError(f"git could not read the workspace's changes: {failed.stderr[-300:]}") from None

    def _offer_new_base(self, target: Target) -> str:
        """What the model is told of a conflict: the base's new head is in the workspace to rebase onto."""
        assert self.mirror is not None
        said = f"The forge says the branch conflicts with {target.base}"
        try:
            head = offer_new_base(self.workspace, self.mirror, target)
        except (BranchRefused, GitFailed) as failed:
            why = str(failed)  # GitFailed's text is git's stderr
            log.warning("%s: fetching the new base failed: %s", self.store.key, why)
            return f"{said}, and its new head could not be fetched ({why[-300:]}). {TELL_THE_THREAD}"
        if head is None:
            return f"{said}, though {target.base} has not moved under it. {TELL_THE_THREAD}"
        return (
            f"{said}: {target.base} moved since the workspace was cloned. Its new head {head[:12]} is in "
            f"the workspace as {BASE_BUNDLE}: {rebase_howto(target.base)}."
        )

    def _refuse_if_unchanged(self, snapshot: Snapshot, record: PullRequestRecord | None) -> None:
        if snapshot.changed or (snapshot.on_forge and record is None):
            return  # a branch pushed before a crash, its pull request not opened yet: open it now
        if record is not None:
            raise ToolError(
                f"nothing changed since the last push to {record.card.branch}; {record.card.noun} "
                f"{record.card.reference} is up to date: {record.card.url}"
            )
        raise ToolError("nothing in the workspace changed since it was cloned; there is nothing to propose")

    def _push(self, snapshot: Snapshot, target: Target, title: str, body: str) -> str:
        message = f"{title}\n\n{body}".strip() + f"\n\nSlack-Thread: {self.store.key}\n"
        author = (self.settings.COMMIT_AUTHOR_NAME, self.settings.COMMIT_AUTHOR_EMAIL)
        try:
            return push_snapshot(self.workspace, snapshot, target, message=message, author=author)
        except BranchRefused as refused:
            raise ToolError(str(refused)) from None
        except GitFailed as failed:
            raise ToolError(f"git could not commit the changes: {failed.stderr[-300:]}") from None

    def _show(self, record: PullRequestRecord) -> None:
        """Keep the record, edit the thread's card, and watch the head's CI while it runs."""
        save_record(self.store, record)
        show_card(self.store, record.card)
        if record.card.ci not in SETTLED_CI:
            schedule_ci_watch(self.store.redis, self.store.key, record.head)


def thread_branch(channel: str, thread_ts: str) -> str:
    return f"{channel.lower()}-{thread_ts.replace('.', '')}"


def stat_line(stat: str) -> str:
    """The summary line of `git diff --stat` ("2 files changed, 5 insertions(+)")."""
    lines = [line for line in stat.splitlines() if "changed" in line]
    return lines[-1].strip() if lines else "no file changes"


def _said(card: PullRequestNotice, opened: bool, snapshot: Snapshot) -> str:
    verb = "Opened" if opened else "Updated"
    changes = stat_line(snapshot.stat) if snapshot.changed else "no new commit"
    lines = [
        f"{verb} {card.noun} {card.reference}: {card.url}",
        f"Branch {card.branch} → {card.base}: {changes}.",
    ]
    return "\n".join(lines)
