"""What a running turn needs from the outside world, as small protocols the caller implements.

The loop never touches Redis or Slack: it records through a `TurnSink` (durable, idempotent
appends to the wire log), takes steering input from it, and tells a `TurnReporter` what is
happening so the thread can show it. A cancel is pushed to it (`Loop.cancel`), never polled.

Every port the loop awaits is async, so a slow store delays only the turn that waits on it,
never the other turns sharing its event loop. The reporter and the step text stay synchronous
and must not do I/O: they note what happened and let a publisher of the caller's show it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import BaseModel

from agent.messages import Message, ToolCall
from agent.model.base import StreamListener
from agent.projection.report import ProjectionRepair
from agent.tools.base import ToolResult
from agent.tools.policy import ApprovalDecision


class TurnSink(Protocol):
    async def record(self, record: BaseModel, once_key: str) -> str:
        """Append durably, once per key; returns the wire entry id."""
        ...

    async def record_all(self, records: Sequence[tuple[BaseModel, str]]) -> list[str]:
        """`record` each (record, key), in order, in one write; returns their wire entry ids."""
        ...

    async def take_input(self) -> list[tuple[Message, str]]:
        """User messages that arrived since the last call, already on the wire: (message, entry id)."""
        ...

    async def compacted(self, history: list[Message], through: str) -> None:
        """A compaction was applied: `history` is the folded history up to wire entry `through`."""
        ...

    async def park(self, step_uuid: str, calls: list[ParkedCall]) -> None:
        """These calls wait for a person's approval; the turn ends and frees its worker."""
        ...

    async def repaired(self, step: int, repair: ProjectionRepair) -> None:
        """The projection for `step`'s model request repaired the history in a new way (it is
        told once per change, not before every request); keep it on the session's record."""
        ...


class StepText(Protocol):
    """Where a step's text goes while the model writes it, so the thread can show it live."""

    def listener(self, step: int) -> StreamListener:
        """Hears the step's text deltas as they stream in (and a restart when it is asked again)."""
        ...

    def written(self, step: int, text: str, calls: list[ToolCall]) -> None:
        """The step's answer is complete: its whole text and the calls it asks for."""
        ...


@dataclass(frozen=True)
class ParkedCall:
    call: ToolCall
    reason: str | None


class DeferredResults(Protocol):
    """Where the results of deferred calls (sub-agents) come from."""

    async def wait(self, step_uuid: str, calls: list[ToolCall]) -> dict[str, ToolResult] | None:
        """Their results if every one has arrived; otherwise None and the step parks until they do."""
        ...


class NoDeferredResults:
    """For loops without sub-agents: a deferred call has no source, so the step parks."""

    async def wait(self, step_uuid: str, calls: list[ToolCall]) -> dict[str, ToolResult] | None:
        return None


@dataclass(frozen=True)
class ParkedStep:
    """A parked step, ready to go on: run its calls with these decisions; `results` are the
    outcomes of deferred calls (sub-agents) that arrived while it was parked."""

    step_uuid: str
    decisions: dict[str, ApprovalDecision] = field(default_factory=dict)
    results: dict[str, ToolResult] = field(default_factory=dict)


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
    pruned: int = 0  # tool outputs replaced by pointers ("pruned")
    dropped: int = 0  # oldest messages left out of the summary request because it overflowed ("done")


@dataclass(frozen=True)
class CallsDeferred:
    """These calls wait for sub-agents; the turn parks until their results arrive."""

    calls: list[ToolCall]


TurnEvent = (
    StepStarted | ToolCallsStarted | ToolFinished | CompactionStarted | CompactionFinished | CallsDeferred
)


class TurnReporter(Protocol):
    def report(self, event: TurnEvent) -> None:
        """Called on the turn's event loop: note the event, do no I/O (see the module's doc)."""
        ...


class NullReporter:
    def report(self, event: TurnEvent) -> None:
        return None


TurnEndReason = Literal[
    "completed", "cancelled", "failed", "awaiting_approval", "awaiting_agents", "timed_out", "handed_back"
]
PARKED_REASONS = frozenset({"awaiting_approval", "awaiting_agents"})
# The worker was asked to stop (a deploy): the turn has not ended; another worker goes on with it.
HANDED_BACK: TurnEndReason = "handed_back"
WireEndReason = Literal["completed", "cancelled", "failed"]


@dataclass(frozen=True)
class Ending:
    """How a turn outcome is recorded: its `turn.ended` record (none while parked), the session's
    state after it, and the state its progress card closes in (none: the card stays open)."""

    wire: WireEndReason | None
    state: str
    card: str | None


# The one outcome → state table (docs/architecture.md, "Session states").
ENDINGS: dict[TurnEndReason, Ending] = {
    "completed": Ending(wire="completed", state="idle", card="done"),
    "cancelled": Ending(wire="cancelled", state="cancelled", card="cancelled"),
    "failed": Ending(wire="failed", state="failed", card="failed"),
    "timed_out": Ending(wire="failed", state="failed", card="timed_out"),
    "awaiting_approval": Ending(wire=None, state="awaiting_approval", card="awaiting_approval"),
    "awaiting_agents": Ending(wire=None, state="awaiting_agents", card=None),
    "handed_back": Ending(wire=None, state="queued", card="handed_back"),
}


@dataclass
class TurnOutcome:
    reason: TurnEndReason
    answer: str | None = None
    error: str | None = None
    steps: int = 0
    unknown_calls: list[ToolCall] = field(default_factory=list)
