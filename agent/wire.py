"""Wire records: the append-only events a session's history is folded from (context-core.md §5.2).

Each record is stored as one entry of the session's Redis stream. The stream entry id becomes
the record's `id` when it is read back, and the `id` of the message the record creates. Extra
keys (`time`, `job`, `key` …) ride along untouched, so every model allows them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from agent.messages import ContentPart, Message, Origin


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")


# --- loop events (inside context.append_loop_event) -------------------------------------


class StepBegin(_Record):
    """Written when the model has answered; `usage` is that answer's (agent.model.base.Usage as a
    dict, `estimated` when the provider sent none), counted once here and copied onto step.end."""

    type: Literal["step.begin"] = "step.begin"
    uuid: str
    turn_id: str | None = None
    step: int | None = None
    usage: dict[str, Any] | None = None


class ContentPartEvent(_Record):
    type: Literal["content.part"] = "content.part"
    step_uuid: str
    part: ContentPart
    uuid: str | None = None
    turn_id: str | None = None
    step: int | None = None


class ToolCallEvent(_Record):
    """A tool call of a step. `args` is the parsed object (absent = null arguments).

    `arguments` (this project's addition) keeps the model's raw argument string when it was not
    valid JSON, so the history shows the model exactly what it sent.
    """

    type: Literal["tool.call"] = "tool.call"
    step_uuid: str
    tool_call_id: str
    name: str
    args: Any = None
    arguments: str | None = None
    extras: dict[str, Any] | None = None
    uuid: str | None = None
    turn_id: str | None = None
    step: int | None = None


class ToolResultPayload(_Record):
    output: str | list[ContentPart]
    is_error: bool | None = None
    note: str | None = None


class ToolResultEvent(_Record):
    type: Literal["tool.result"] = "tool.result"
    tool_call_id: str
    result: ToolResultPayload
    parent_uuid: str | None = None


class StepEnd(_Record):
    type: Literal["step.end"] = "step.end"
    uuid: str
    turn_id: str | None = None
    step: int | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


LoopEvent = Annotated[
    StepBegin | ContentPartEvent | ToolCallEvent | ToolResultEvent | StepEnd,
    Field(discriminator="type"),
]

# --- records -------------------------------------------------------------------------------


class AppendMessage(_Record):
    type: Literal["context.append_message"] = "context.append_message"
    message: Message


class AppendLoopEvent(_Record):
    type: Literal["context.append_loop_event"] = "context.append_loop_event"
    event: LoopEvent


class ApplyCompaction(_Record):
    """The prefix `[0, compacted_count)` of the history is replaced by `summary_message`."""

    type: Literal["context.apply_compaction"] = "context.apply_compaction"
    summary: str
    context_summary: str
    compacted_count: int
    kept_count: int | None = None
    source: Literal["auto", "manual"] = "auto"
    tokens_before: int | None = None
    tokens_after: int | None = None
    dropped_count: int | None = None
    wire_start: str | None = None
    wire_end: str | None = None
    usage: dict[str, Any] | None = None  # the summary request's, as on step.begin (jobs/usage.py counts it)


class ToolResultPrune(_Record):
    """Old tool outputs replaced by one-line pointers, keyed by tool_call_id."""

    type: Literal["context.prune_tool_results"] = "context.prune_tool_results"
    replacements: dict[str, str]
    tokens_before: int | None = None
    tokens_after: int | None = None


class ContextClear(_Record):
    type: Literal["context.clear"] = "context.clear"


class TurnPrompt(_Record):
    type: Literal["turn.prompt"] = "turn.prompt"
    input: str
    origin: Origin | None = None
    turn_id: str | None = None


class TurnSteer(_Record):
    type: Literal["turn.steer"] = "turn.steer"
    input: str
    origin: Origin | None = None
    turn_id: str | None = None


class TurnCancel(_Record):
    type: Literal["turn.cancel"] = "turn.cancel"
    turn_id: str | None = None
    target: Literal["active", "queued"] | None = None
    reason: Literal["user_cancelled", "aborted"] | None = None


class TurnEnded(_Record):
    type: Literal["turn.ended"] = "turn.ended"
    turn_id: str
    reason: Literal["completed", "cancelled", "failed", "blocked", "interrupted"]
    error: str | None = None
    duration_ms: int | None = None


class FullCompactionBegin(_Record):
    type: Literal["full_compaction.begin"] = "full_compaction.begin"
    source: Literal["auto", "manual"]
    instruction: str | None = None


class FullCompactionCancel(_Record):
    type: Literal["full_compaction.cancel"] = "full_compaction.cancel"
    reason: str | None = None


class FullCompactionComplete(_Record):
    type: Literal["full_compaction.complete"] = "full_compaction.complete"


WireRecord = Annotated[
    AppendMessage
    | AppendLoopEvent
    | ApplyCompaction
    | ToolResultPrune
    | ContextClear
    | TurnPrompt
    | TurnSteer
    | TurnCancel
    | TurnEnded
    | FullCompactionBegin
    | FullCompactionCancel
    | FullCompactionComplete,
    Field(discriminator="type"),
]
WIRE_RECORD = TypeAdapter(WireRecord)
KNOWN_RECORD_TYPES = frozenset(
    model.model_fields["type"].default
    for model in (
        AppendMessage,
        AppendLoopEvent,
        ApplyCompaction,
        ToolResultPrune,
        ContextClear,
        TurnPrompt,
        TurnSteer,
        TurnCancel,
        TurnEnded,
        FullCompactionBegin,
        FullCompactionCancel,
        FullCompactionComplete,
    )
)


def record_to_json(record: BaseModel) -> dict[str, Any]:
    return record.model_dump(mode="json", exclude_none=True)
