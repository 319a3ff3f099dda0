"""The inherited snapshot a fork starts from (context-core.md §2.8): the trailing open exchange closed."""

from __future__ import annotations

from collections.abc import Sequence

from agent.messages import Message, TextPart

INHERITED_IN_FLIGHT_TOOL_OUTPUT = (
    "This tool call was still executing when this conversation snapshot was inherited from the source "
    "agent, so its result is not part of this context. The outcome is unknown — do not assume it "
    "succeeded or failed, and do not wait for it."
)


def close_trailing_open_tool_exchange(history: Sequence[Message]) -> list[Message]:
    """A copy of `history` whose last assistant's unanswered calls get the inherited-in-flight result.

    Only the trailing exchange is closed; earlier open exchanges are left for the projector.
    """
    owner = len(history) - 1
    while owner >= 0 and history[owner].role == "tool":
        owner -= 1
    if owner < 0:
        return []
    assistant = history[owner]
    if assistant.role != "assistant" or not assistant.tool_calls:
        return list(history)
    trailing = history[owner + 1 :]
    answered = {message.tool_call_id for message in trailing}
    open_ids = [call.id for call in assistant.tool_calls if call.id not in answered]
    if not open_ids:
        return list(history)
    if assistant.partial:
        assistant = assistant.model_copy(update={"partial": None})
    return [*history[:owner], assistant, *trailing, *(_in_flight_result(call_id) for call_id in open_ids)]


def _in_flight_result(tool_call_id: str) -> Message:
    return Message(
        role="tool", content=[TextPart(text=INHERITED_IN_FLIGHT_TOOL_OUTPUT)], tool_call_id=tool_call_id
    )
