"""A call's preview (ToolExecution.preview): what a person approving it sees besides the call.

The pure core, with a tool of the test's own: the preview joins the policy's reason on the
parked call; a preview that fails parks nothing and becomes the call's result instead of an
approval request; a turn stopped while a preview runs parks nothing and does not wait for it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.loop.parking import approval_check
from agent.messages import ToolCall
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError
from agent.tools.cancel import CancelSignal
from agent.tools.policy import AskForApproval, NoGuard
from agent.tools.preflight import PreparedCall, preflight_call, settle_permission
from agent.tools.registry import ToolRegistry

CALL = ToolCall(id="p1", name="publish", arguments="{}")


class Publish(Tool[Params]):
    name = "publish"
    description = "Publish the workspace."
    parameters = Params
    requires_approval = True

    def __init__(self, preview: object) -> None:
        self._preview = preview

    def resolve_execution(self, args: Params, context: ToolContext) -> ToolExecution:
        async def preview() -> str:
            if isinstance(self._preview, Exception):
                raise self._preview
            if self._preview == "hang":
                await asyncio.Event().wait()
            return str(self._preview)

        return ToolExecution(run=lambda: self.run(args, context), preview=preview)

    async def run(self, args: Params, context: ToolContext) -> ToolResult:
        return ToolResult(output="published")


def parked(tool: Publish, tmp_path: Path, signal: CancelSignal | None = None) -> list[str | None]:
    check = approval_check(ToolRegistry([tool]), tmp_path, AskForApproval())
    return [p.reason for p in asyncio.run(check([CALL], signal or CancelSignal()))]


def test_the_preview_is_shown_after_the_policys_reason(tmp_path: Path):
    assert parked(Publish("Pushes to acme/app\n1 file changed"), tmp_path) == [
        '"publish" reaches beyond the workspace files and needs approval.\nPushes to acme/app\n1 file changed'
    ]


def test_a_failing_preview_asks_nobody_and_is_the_calls_result(tmp_path: Path):
    tool = Publish(ToolError("nothing changed"))
    assert parked(tool, tmp_path) == []

    registry, signal = ToolRegistry([tool]), CancelSignal()
    prepared = preflight_call(
        CALL, registry=registry, workspace=tmp_path, signal=signal, guard=NoGuard(), policy=AskForApproval()
    )
    assert isinstance(prepared, PreparedCall)
    result = asyncio.run(settle_permission(prepared, None, signal))
    assert (
        result is not None and result.is_error and result.text() == 'Tool "publish" failed: nothing changed'
    )


def test_a_turn_stopped_during_a_preview_parks_nothing(tmp_path: Path):
    signal = CancelSignal()

    async def stop_soon() -> list[str | None]:
        check = approval_check(ToolRegistry([Publish("hang")]), tmp_path, AskForApproval())
        asyncio.get_running_loop().call_later(0.05, signal.cancel, "user_cancel")
        return [p.reason for p in await asyncio.wait_for(check([CALL], signal), timeout=10)]

    assert asyncio.run(stop_soon()) == []
