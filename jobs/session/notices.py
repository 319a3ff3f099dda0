"""Notices: what a turn wants the thread to show, queued in the session's outbox stream.

The turn writes notices; the delivery job (gateway) renders and posts them in order. A
progress notice is a snapshot of the turn's card: `SessionStore.post_notice` keeps only the
turn's newest one (the outbox holds one entry per turn, without the card) and the delivery job
edits one message per turn with it; every other notice is posted once.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

ToolState = Literal[
    "running", "done", "failed", "unknown", "denied", "skipped", "aborted", "awaiting_approval"
]
TurnState = Literal[
    "running", "done", "failed", "cancelled", "interrupted", "awaiting_approval", "timed_out", "handed_back"
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class _Notice(_Frozen):
    turn_id: str | None = None


class ToolLine(_Frozen):
    """One tool call on a progress card. `children` are the lines of a sub-agent it runs."""

    tool_call_id: str
    name: str
    summary: str  # short form of the arguments, safe to show
    state: ToolState
    started_at: float | None = None
    ended_at: float | None = None
    children: list[ToolLine] = Field(default_factory=list)


class TurnCard(_Frozen):
    turn_id: str
    state: TurnState
    started_at: float
    updated_at: float
    steps: int = 0
    tools: list[ToolLine] = Field(default_factory=list)
    note: str | None = None  # e.g. "compacting the conversation…"


class ProgressNotice(_Notice):
    kind: Literal["progress"] = "progress"
    card: TurnCard


class AnswerNotice(_Notice):
    """The model's answer, in Markdown. `step`: the model step that wrote it, whose live
    stream (jobs.session.live) may have shown it already."""

    kind: Literal["answer"] = "answer"
    text: str
    step: int | None = None


class LiveNotice(_Notice):
    """A model step's live text and tool calls: the outbox entry placing its stream in the
    thread. The content is in the session's live hash (jobs.session.live), read when delivered."""

    kind: Literal["live"] = "live"
    turn_id: str
    step: int


class ErrorNotice(_Notice):
    """A turn could not finish: a short apology and what went wrong."""

    kind: Literal["error"] = "error"
    text: str


class UnknownResultNotice(_Notice):
    """A tool call whose result was never recorded: its outcome is unknown, nothing was re-run."""

    kind: Literal["unknown_result"] = "unknown_result"
    tool_call_id: str
    tool_name: str
    summary: str


class CancelledNotice(_Notice):
    kind: Literal["cancelled"] = "cancelled"
    by: str | None = None
    text: str


class ApprovalRequestNotice(_Notice):
    kind: Literal["approval_request"] = "approval_request"
    approval_id: str
    tool_call_id: str
    tool_name: str
    summary: str
    details: str | None = None  # the call's full arguments: a person approves what they can read
    reason: str | None = None


class ApprovalDecidedNotice(_Notice):
    """Edits the matching approval card: who decided what."""

    kind: Literal["approval_decided"] = "approval_decided"
    approval_id: str
    decision: Literal["approved", "denied", "cancelled", "expired"]
    by: str | None = None


class CompactionNotice(_Notice):
    kind: Literal["compaction"] = "compaction"
    state: Literal["started", "done", "pruned", "failed"]
    compacted: int | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    detail: str | None = None
    pruned: int | None = None  # "pruned": old tool outputs replaced by pointers
    dropped: int | None = None  # "done": oldest messages the summary could not include


class InfoNotice(_Notice):
    """Anything else the thread should be told (edits applied, limits hit, who resumed)."""

    kind: Literal["info"] = "info"
    text: str


class FileNotice(_Notice):
    """A workspace file the agent sends to the thread (send_file), uploaded once by the delivery."""

    kind: Literal["file"] = "file"
    path: str  # relative to the session's workspace
    name: str
    title: str
    size: int
    call_id: str


class PullRequestNotice(_Notice):
    """The thread's pull request card (jobs.forge): posted once, edited by each later push."""

    kind: Literal["pull_request"] = "pull_request"
    forge: Literal["github", "gitlab"] = "github"
    repo: str  # owner/name
    number: int
    url: str
    title: str
    branch: str
    base: str
    stat: str  # the last line of `git diff --stat`: files changed, insertions, deletions
    ci: str | None = None  # the forge's combined status of the head (pending, success, …)
    conflicts: bool = False  # the forge says the branch does not merge cleanly into `base`
    pushes: int = 1

    @property
    def noun(self) -> str:
        return forge_noun(self.forge)

    @property
    def reference(self) -> str:
        """As its forge writes it: "#12", or GitLab's "!12"."""
        return f"!{self.number}" if self.forge == "gitlab" else f"#{self.number}"


def forge_noun(forge: str | None) -> str:
    """What the forge calls the change it reviews."""
    return "merge request" if forge == "gitlab" else "pull request"


class ReactionNotice(_Notice):
    """An emoji reaction on a person's message: `add` and/or `remove` (Slack's emoji names)."""

    kind: Literal["reaction"] = "reaction"
    message_ts: str
    add: str | None = None
    remove: str | None = None


Notice = Annotated[
    ProgressNotice
    | AnswerNotice
    | LiveNotice
    | ErrorNotice
    | UnknownResultNotice
    | CancelledNotice
    | ApprovalRequestNotice
    | ApprovalDecidedNotice
    | CompactionNotice
    | InfoNotice
    | FileNotice
    | PullRequestNotice
    | ReactionNotice,
    Field(discriminator="kind"),
]
_NOTICE = TypeAdapter(Notice)


def parse_notice(raw: bytes | str) -> Notice:
    return _NOTICE.validate_json(raw)
