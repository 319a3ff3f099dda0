"""Strict repairs applied after `project`, for the one resend after a structural rejection.

See docs/context-core.md §2.5.
"""

from __future__ import annotations

from collections.abc import Callable

from agent.messages import Message, ToolCall, is_vacuous_part
from agent.projection import anomalies as an
from agent.projection._projected_message import is_unavailable_result
from agent.projection.anomalies import Anomaly

Emit = Callable[[Anomaly], None] | None


def strict_repairs(projected: list[Message], emit: Emit = None) -> list[Message]:
    """Dedupe, merge consecutive assistants, drop leading non-user messages, in that order."""
    return drop_leading_non_user(merge_consecutive_assistants(dedupe_tool_calls(projected, emit), emit), emit)


def dedupe_tool_calls(messages: list[Message], emit: Emit = None) -> list[Message]:
    """The first call per id and the first result per id win; a real result replaces a placeholder."""
    seen_calls: set[str] = set()
    kept_results: dict[str, int] = {}
    out: list[Message] = []
    for message in messages:
        role = message.role
        if role == "assistant" and message.tool_calls:
            deduped = _without_seen_calls(message, message.tool_calls, seen_calls, emit)
            if deduped is not None:
                out.append(deduped)
            continue
        call_id = message.tool_call_id
        if role == "tool" and call_id is not None:
            kept_at = kept_results.get(call_id)
            if kept_at is not None:
                if is_unavailable_result(out[kept_at]) and not is_unavailable_result(message):
                    out[kept_at] = message
                elif emit is not None:
                    emit(an.duplicate_result_dropped(call_id))
                continue
            kept_results[call_id] = len(out)
        out.append(message)
    return out


def _without_seen_calls(
    message: Message, calls: list[ToolCall], seen: set[str], emit: Emit
) -> Message | None:
    kept = []
    for call in calls:
        call_id = call.id
        if call_id in seen:
            if emit is not None:
                emit(an.duplicate_call_dropped(call_id))
            continue
        seen.add(call_id)
        kept.append(call)
    if len(kept) == len(calls):
        return message
    if kept or not all(is_vacuous_part(part) for part in message.content):
        return message.model_copy(update={"tool_calls": kept})
    if message.content and emit is not None:
        emit(an.vacuous_dropped(message.role))
    return None


def merge_consecutive_assistants(messages: list[Message], emit: Emit = None) -> list[Message]:
    out: list[Message] = []
    previous_role = None
    for message in messages:
        role = message.role
        if role == "assistant" and previous_role == "assistant":
            previous = out[-1]
            out[-1] = previous.model_copy(
                update={
                    "content": [*previous.content, *message.content],
                    "tool_calls": [*previous.tool_calls, *message.tool_calls],
                }
            )
            if emit is not None:
                emit(an.assistants_merged())
            continue
        out.append(message)
        previous_role = role
    return out


def drop_leading_non_user(messages: list[Message], emit: Emit = None) -> list[Message]:
    start = 0
    while start < len(messages) and messages[start].role != "user":
        if emit is not None:
            emit(an.leading_dropped(messages[start].role))
        start += 1
    return messages[start:]
