"""What a running turn needs from the outside world, as small protocols the caller implements.

The loop never touches Redis or Slack: it records through a `TurnSink` (durable, idempotent
appends to the wire log), takes steering input from it, asks it whether the people in the
thread cancelled, and tells a `TurnReporter` what is happening so the thread can show it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import BaseModel

from agent.messages import Message, ToolCall
from agent.tools.base import ToolResult
from agent.tools.policy import ApprovalDecision


class TurnSink(Protocol):
    def record(self, record: BaseModel, once_key: str) -> str:
        """Append durably, once per key; returns the wire entry id."""
        ...

    def take_input(self) -> list[tuple[Message, str]]:
        """User messages that arrived since the last call, already on the wire: (message, entry id)."""
        ...

    def cancel_requested(self) -> bool: ...

    def compacted(self, history: list[Message], through: str) -> None:
        """A compaction was applied: `history` is the folded history up to wire entry `through`."""
        ...

    def park(self, step_uuid: str, calls: list[ParkedCall]) -> None:
        """These calls wait for a person's approval; the turn ends and frees its worker."""
        ...


@dataclass(frozen=True)
class ParkedCall:
    call: ToolCall
    reason: str | None


@dataclass(frozen=True)
class ParkedStep:
    """A step parked for approval, now decided: run its calls with these decisions."""

    step_uuid: str
    decisions: dict[str, ApprovalDecision]


# --- what the reporter hears ---------------------------------------------------------------


@dataclass(frozen=True)
class StepStarted:
    step: int


@dataclass(frozen=True)
class ToolCallsStarted:
    step: int
    calls: list[ToolCall]


@dataclass(frozen=True)
class ToolFinished:
    call: ToolCall
    result: ToolResult
    aborted: bool = False


@dataclass(frozen=True)
class CompactionStarted:
    tokens_before: int


@dataclass(frozen=True)
class CompactionFinished:
    outcome: Literal["done", "pruned", "failed", "stale"]
    compacted: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    detail: str | None = None


@dataclass(frozen=True)
class CallsParked:
    calls: list[ParkedCall]


TurnEvent = (
    StepStarted | ToolCallsStarted | ToolFinished | CompactionStarted | CompactionFinished | CallsParked
)


class TurnReporter(Protocol):
    def report(self, event: TurnEvent) -> None: ...


class NullReporter:
    def report(self, event: TurnEvent) -> None:
        return None


TurnEndReason = Literal["completed", "cancelled", "failed", "awaiting_approval", "timed_out"]


@dataclass
class TurnOutcome:
    reason: TurnEndReason
    answer: str | None = None
    error: str | None = None
    steps: int = 0
    unknown_calls: list[ToolCall] = field(default_factory=list)
