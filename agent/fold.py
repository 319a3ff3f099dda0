"""Resume fold: wire records → history (context-core.md §2.9).

`HistoryFold` applies records one at a time, so the loop can keep one alive and feed it the
records it writes, and a turn start can continue from a compaction checkpoint instead of
refolding the whole log. `fold(records)` is the one-shot form.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from agent.messages import ContentPart, Message, Origin, TextPart, ToolCall, is_vacuous_part
from agent.wire import (
    KNOWN_RECORD_TYPES,
    WIRE_RECORD,
    AppendLoopEvent,
    AppendMessage,
    ApplyCompaction,
    ContentPartEvent,
    ContextClear,
    StepBegin,
    StepEnd,
    ToolCallEvent,
    ToolResultEvent,
    ToolResultPrune,
)

log = logging.getLogger(__name__)

INTERRUPTED_TOOL_RESULT = (
    "Tool execution was interrupted before its result was recorded. "
    "Do not assume the tool completed successfully."
)
COMPACTION_SUMMARY_ORIGIN = Origin(kind="compaction_summary")
# A step that ends this way stays open: a later step.begin (or the end of the log) settles it.
UNSETTLING_FINISH_REASONS = frozenset({"interrupted", "error"})


class _OpenStep:
    """The assistant message of the step being folded, still accepting parts and calls."""

    def __init__(self, uuid: str, index: int, record_id: str | None, usage: dict[str, Any] | None) -> None:
        self.uuid = uuid
        self.index = index
        self.record_id = record_id
        self.usage = usage
        self.content: list[ContentPart] = []
        self.tool_calls: list[ToolCall] = []

    def message(self, *, partial: bool) -> Message:
        return Message(
            role="assistant",
            content=list(self.content),
            tool_calls=list(self.tool_calls),
            partial=True if partial else None,
            id=self.record_id,
        )

    def is_vacuous(self) -> bool:
        return not self.tool_calls and all(is_vacuous_part(part) for part in self.content)


class HistoryFold:
    """Incremental fold state: history, the open step, pending calls and deferred messages."""

    def __init__(self, history: Iterable[Message] = ()) -> None:
        self._history: list[Message] = list(history)
        self._open: _OpenStep | None = None
        self._pending: dict[str, None] = {}
        self._deferred: list[Message] = []
        self.skipped = 0

    @classmethod
    def from_records(
        cls, records: Iterable[Mapping[str, Any] | BaseModel], history: Iterable[Message] = ()
    ) -> HistoryFold:
        folder = cls(history)
        for record in records:
            folder.apply(record)
        return folder

    # -- public ------------------------------------------------------------------------

    @property
    def history(self) -> list[Message]:
        """The folded history; an unsettled step appears as a partial assistant."""
        if self._open is None:
            return list(self._history)
        history = list(self._history)
        history[self._open.index] = self._open.message(partial=True)
        return history

    @property
    def pending_call_ids(self) -> list[str]:
        return list(self._pending)

    @property
    def open_step_uuid(self) -> str | None:
        return self._open.uuid if self._open is not None else None

    @property
    def open_step_usage(self) -> dict[str, Any] | None:
        """The open step's model usage (from its step.begin), for the step.end a parked step gets."""
        return self._open.usage if self._open is not None else None

    def pending_calls(self) -> list[ToolCall]:
        """The calls of the open step that have no result yet, in call order."""
        if self._open is None:
            return []
        return [call for call in self._open.tool_calls if call.id in self._pending]

    def apply(self, record: Mapping[str, Any] | BaseModel, record_id: str | None = None) -> None:
        """Fold one record; `record_id` (the wire entry id) overrides an `id` carried inside it."""
        parsed, carried_id = self._parse(record)
        record_id = record_id or carried_id
        if parsed is None:
            return
        if isinstance(parsed, AppendMessage):
            self._append_message(parsed.message, record_id)
        elif isinstance(parsed, AppendLoopEvent):
            self._apply_event(parsed.event, record_id)
        elif isinstance(parsed, ApplyCompaction):
            self._apply_compaction(parsed, record_id)
        elif isinstance(parsed, ToolResultPrune):
            self._apply_prune(parsed)
        elif isinstance(parsed, ContextClear):
            self._history, self._open, self._deferred = [], None, []
            self._pending.clear()

    def settle(self) -> None:
        """Close the open step: interrupted results for pending calls, then seal or drop it."""
        step, self._open = self._open, None
        for call_id in self._pending:
            self._history.append(
                Message(
                    role="tool",
                    content=[TextPart(text=INTERRUPTED_TOOL_RESULT)],
                    tool_call_id=call_id,
                    is_error=True,
                    # Derived from the step's wire id, so the message stays identifiable after a reload.
                    id=f"{step.record_id}/{call_id}" if step is not None and step.record_id else None,
                )
            )
        self._pending.clear()
        if step is not None:
            if step.is_vacuous():
                del self._history[step.index]
            else:
                self._history[step.index] = step.message(partial=False)
        self._flush_deferred()

    # -- records -----------------------------------------------------------------------

    def _parse(self, record: Mapping[str, Any] | BaseModel) -> tuple[BaseModel | None, str | None]:
        if isinstance(record, BaseModel):
            extra = record.model_extra or {}
            return record, extra.get("id")
        if record.get("type") not in KNOWN_RECORD_TYPES:
            self.skipped += 1
            return None, None
        try:
            return WIRE_RECORD.validate_python(record), record.get("id")
        except ValidationError as error:
            self.skipped += 1
            log.warning("skipped a malformed wire record %s: %s", record.get("id"), error.errors()[:1])
            return None, None

    def _append_message(self, message: Message, record_id: str | None) -> None:
        if message.id is None and record_id is not None:
            message = message.model_copy(update={"id": record_id})
        if self._pending:
            self._deferred.append(message)
        else:
            self._history.append(message)

    def _apply_event(self, event: BaseModel, record_id: str | None) -> None:
        if isinstance(event, StepBegin):
            self.settle()
            self._open = _OpenStep(event.uuid, len(self._history), record_id, event.usage)
            self._history.append(self._open.message(partial=True))
        elif isinstance(event, ContentPartEvent):
            if self._open is not None and event.step_uuid == self._open.uuid:
                self._open.content.append(event.part)
        elif isinstance(event, ToolCallEvent):
            self._add_call(event)
        elif isinstance(event, ToolResultEvent):
            self._add_result(event, record_id)
        elif isinstance(event, StepEnd) and event.finish_reason not in UNSETTLING_FINISH_REASONS:
            self.settle()

    def _add_call(self, event: ToolCallEvent) -> None:
        if self._open is None or event.step_uuid != self._open.uuid:
            return
        self._open.tool_calls.append(
            ToolCall(
                id=event.tool_call_id, name=event.name, arguments=_call_arguments(event), extras=event.extras
            )
        )
        self._pending[event.tool_call_id] = None

    def _add_result(self, event: ToolResultEvent, record_id: str | None) -> None:
        if event.tool_call_id not in self._pending:
            return
        del self._pending[event.tool_call_id]
        output = event.result.output
        content: list[ContentPart] = [TextPart(text=output)] if isinstance(output, str) else list(output)
        self._history.append(
            Message(
                role="tool",
                content=content,
                tool_call_id=event.tool_call_id,
                is_error=event.result.is_error,
                note=event.result.note,
                id=record_id,
            )
        )
        if not self._pending:
            self._flush_deferred()

    def _apply_compaction(self, record: ApplyCompaction, record_id: str | None) -> None:
        if self._open is not None and self._open.index < record.compacted_count:
            self.settle()
        summary = Message(
            role="user",
            content=[TextPart(text=record.context_summary)],
            origin=COMPACTION_SUMMARY_ORIGIN,
            id=record_id,
        )
        self._history = [summary, *self._history[record.compacted_count :]]
        if self._open is not None:
            self._open.index -= record.compacted_count - 1

    def _apply_prune(self, record: ToolResultPrune) -> None:
        replacements = record.replacements
        self._history = [
            message.model_copy(update={"content": [TextPart(text=replacements[message.tool_call_id])]})
            if message.role == "tool" and message.tool_call_id in replacements
            else message
            for message in self._history
        ]

    def _flush_deferred(self) -> None:
        deferred, self._deferred = self._deferred, []
        self._history.extend(deferred)


def _call_arguments(event: ToolCallEvent) -> str | None:
    if event.arguments is not None:
        return event.arguments
    if "args" not in event.model_fields_set:
        return None
    return json.dumps(event.args, separators=(",", ":"), ensure_ascii=False)


def fold(records: Iterable[Mapping[str, Any] | BaseModel], history: Iterable[Message] = ()) -> list[Message]:
    """Fold wire records (optionally on top of a checkpoint history) into a history."""
    return HistoryFold.from_records(records, history).history
