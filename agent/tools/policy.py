"""Who may stop a call before it runs: the guard (veto by name) and the permission policy.

The guard is context-core.md §4.2 step 3: a veto by tool name and call source, with its own text. The
permission policy is step 9: it decides allow / deny / ask for a prepared call. "Ask" is a
value (`Ask`), so a caller can park on it: the executor hands it to an `Approver`, an async
callable that answers approved / rejected(feedback) / cancelled. The Slack layer provides
an approver that posts the request and waits for a button; without one, a call that needs
approval is not run and the model is told the request was cancelled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from agent.tools.base import Tool

CallSource = Literal["model", "user"]


class ToolGuard(Protocol):
    def veto(self, tool_name: str, source: CallSource) -> str | None:
        """A text for the model when this call must not run, else None."""
        ...


class NoGuard:
    def veto(self, tool_name: str, source: CallSource) -> str | None:
        return None


@dataclass(frozen=True, slots=True)
class DisabledTools:
    """Vetoes calls to the named tools (for example tools a channel must not use)."""

    names: frozenset[str]
    text: str = 'Tool "{name}" is disabled in this session.'

    def veto(self, tool_name: str, source: CallSource) -> str | None:
        return self.text.format(name=tool_name) if tool_name in self.names else None


@dataclass(frozen=True, slots=True)
class Allow:
    pass


@dataclass(frozen=True, slots=True)
class Deny:
    """`by`: "policy" (the blanket text) or "rule" (a named rule, with an optional reason)."""

    by: Literal["policy", "rule"] = "policy"
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Ask:
    reason: str | None = None


Decision = Allow | Deny | Ask
ALLOW = Allow()


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    tool_call_id: str
    tool_name: str
    arguments: Any
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Approved:
    pass


@dataclass(frozen=True, slots=True)
class Rejected:
    feedback: str | None = None


@dataclass(frozen=True, slots=True)
class Cancelled:
    pass


@dataclass(frozen=True, slots=True)
class Expired:
    """Nobody decided within the approval timeout (`after`, e.g. "24 h"): denied, not run."""

    after: str


ApprovalDecision = Approved | Rejected | Cancelled | Expired
Approver = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]


@dataclass(frozen=True, slots=True)
class RecordedDecisions:
    """The approver of a parked step's continuation: it answers from the decisions people already
    took (a call nobody decided: cancelled), so nobody is asked now."""

    decisions: Mapping[str, ApprovalDecision]

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        return self.decisions.get(request.tool_call_id, Cancelled())


class PermissionPolicy(Protocol):
    def decide(self, tool: Tool[Any], arguments: Any, tool_call_id: str) -> Decision: ...


class AllowAll:
    def decide(self, tool: Tool[Any], arguments: Any, tool_call_id: str) -> Decision:
        return ALLOW


@dataclass(frozen=True, slots=True)
class AskForApproval:
    """Asks before a tool that declares `requires_approval` and before the tools named in `named`.

    The declaration is the floor: a declared tool asks whatever `named` holds (an empty or
    misspelled list adds nothing but takes nothing away). Only `waived`, a deployment's explicit
    APPROVAL_WAIVED_TOOLS, lets a declared tool run unasked; a name in `named` always asks.
    """

    named: frozenset[str] = frozenset()
    waived: frozenset[str] = frozenset()

    def decide(self, tool: Tool[Any], arguments: Any, tool_call_id: str) -> Decision:
        if tool.name in self.named:
            return Ask(reason=f'"{tool.name}" needs a person\'s approval in this workspace.')
        if tool.requires_approval and tool.name not in self.waived:
            return Ask(reason=f'"{tool.name}" reaches beyond the workspace files and needs approval.')
        return ALLOW
