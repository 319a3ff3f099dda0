"""Tool-call ids made unique before a step runs (context-core.md §4.3).

A model may repeat an id inside one response, or reuse one it used earlier in the session;
either would pair a result with the wrong call. The later occurrence becomes `<id>__2`,
`<id>__3`, … (the first suffix not yet taken).
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.messages import Message, ToolCall


def seen_call_ids(history: Iterable[Message]) -> set[str]:
    return {call.id for message in history for call in message.tool_calls}


def normalize_call_ids(calls: list[ToolCall], seen: set[str]) -> list[ToolCall]:
    """Calls with unique ids; `seen` is updated with every id handed out."""
    unique: list[ToolCall] = []
    for call in calls:
        new_id = call.id
        suffix = 2
        while new_id in seen:
            new_id = f"{call.id}__{suffix}"
            suffix += 1
        seen.add(new_id)
        unique.append(call if new_id == call.id else call.model_copy(update={"id": new_id}))
    return unique
