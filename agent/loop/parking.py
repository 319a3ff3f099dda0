"""Parking a step for a person's approval, and running it once they decided.

Before a step's calls run, each goes through preflight; a call the permission policy answers
with "ask" parks the whole step (nothing of it runs yet) and the turn ends, freeing its
worker. A call with a preview (agent.tools.base.ToolExecution) shows it on its request; one
whose preview fails asks nobody: it runs with the step and fails with that error. The
continuation runs the parked calls with the recorded decisions as the approver, so a denied
call gets the spec's denial text and an approved one runs exactly once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from agent.loop.ports import ParkedCall
from agent.messages import ToolCall
from agent.tools.base import ToolResult
from agent.tools.cancel import CancelSignal
from agent.tools.policy import (
    ApprovalDecision,
    Approver,
    Ask,
    NoGuard,
    PermissionPolicy,
    RecordedDecisions,
    ToolGuard,
)
from agent.tools.preflight import PreparedCall, asking_reason, preflight_call
from agent.tools.registry import ToolRegistry

ApprovalCheck = Callable[[list[ToolCall], CancelSignal], Awaitable[list[ParkedCall]]]


def approval_check(
    registry: ToolRegistry, workspace: Path, policy: PermissionPolicy, guard: ToolGuard | None = None
) -> ApprovalCheck:
    """The calls of a step that must wait for a person; empty when the step may run now."""

    async def check(calls: list[ToolCall], signal: CancelSignal) -> list[ParkedCall]:
        parked = []
        for call in calls:
            prepared = preflight_call(
                call,
                registry=registry,
                workspace=workspace,
                signal=signal,
                guard=guard or NoGuard(),
                policy=policy,
            )
            if isinstance(prepared, PreparedCall) and isinstance(prepared.decision, Ask):
                reason = await asking_reason(prepared, prepared.decision, signal)
                if not isinstance(reason, ToolResult):  # else nobody is asked: the step runs it
                    parked.append(ParkedCall(call=call, reason=reason))
        return parked

    return check


def approver_for(decisions: dict[str, ApprovalDecision]) -> Approver:
    """An approver that answers from decisions already recorded (a call not decided: cancelled)."""
    return RecordedDecisions(decisions)
