"""open_pull_request: deliver the workspace's changes as a pull request on the channel's repository.

The tool only checks its arguments and hands the work to a `PullRequests` port, which the
caller binds per turn (jobs.forge: the worker commits, pushes with the forge's token and calls
the forge's API; nothing of it runs in the sandbox). A person approves every call; what they
are shown besides the arguments (the target and the diff stat) comes from the port's
`preview`. One thread has one pull request: a later call updates it.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import Field

from agent.offload import in_thread
from agent.tools import accesses as acc
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params

UNAVAILABLE = "open_pull_request is not available here (no repository to open it on)."
BRANCH_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,60}$"


class PullRequests(Protocol):
    def preview(self, branch: str | None) -> str:
        """Where the changes go and what they are, for the person approving; raises ToolError
        when there is nothing to open (no forge, nothing changed)."""
        ...

    def publish(self, title: str, body: str, branch: str | None) -> str:
        """Commit, push, open or update the pull request; what happened, for the model."""
        ...


class OpenPullRequestParams(Params):
    title: str = Field(min_length=1, max_length=200, description="The pull request's title.")
    body: str = Field(
        default="", max_length=20_000, description="The pull request's description (Markdown): what and why."
    )
    branch: str | None = Field(
        default=None,
        pattern=BRANCH_PATTERN,
        description=(
            "A short name for the branch (it becomes threadline/<name>); only the thread's first pull "
            "request uses it. Default: named after the thread."
        ),
    )


class OpenPullRequest(Tool[OpenPullRequestParams]):
    name = "open_pull_request"
    description = (
        "Deliver the changes in the workspace as a pull request on the channel's repository: every "
        "file as it is now is committed to the thread's branch, pushed, and the pull request is opened "
        "(or, if this thread already has one, updated with a new commit). A person approves it first. "
        "Use it when the work is done and checked, or when asked for a pull request."
    )
    parameters = OpenPullRequestParams
    requires_approval = True  # it pushes to a shared repository in the team's name

    def __init__(self, pull_requests: PullRequests | None = None) -> None:
        self.pull_requests = pull_requests

    def unavailable_reason(self) -> str | None:
        return None if self.pull_requests is not None else UNAVAILABLE

    def resolve_execution(self, args: OpenPullRequestParams, context: ToolContext) -> ToolExecution:
        port = self.pull_requests
        assert port is not None  # unavailable_reason said so first

        async def preview() -> str:
            return await in_thread(port.preview, args.branch)

        async def run() -> ToolResult:
            said = await in_thread(port.publish, args.title, args.body, args.branch)
            return ToolResult(output=said)

        # It reads the whole workspace and writes none of it (its commits live beside it), so it
        # waits for the batch's writes but never holds the workspace's write lock.
        return ToolExecution(run=run, accesses=acc.read_tree(str(context.workspace)), preview=preview)

    async def run(self, args: OpenPullRequestParams, context: ToolContext) -> ToolResult:
        return await self.resolve_execution(args, context).run()  # type: ignore[no-any-return]
