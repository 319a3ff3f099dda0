"""Small pieces the loop records or reports: a call's wire event and failure outcomes."""

from __future__ import annotations

from agent.loop.ports import TurnOutcome
from agent.messages import ToolCall
from agent.model.errors import ModelError
from agent.redaction import redact_text
from agent.tools.arguments import parse_tool_call_arguments
from agent.wire import ToolCallEvent


def call_event(step_uuid: str, call: ToolCall) -> ToolCallEvent:
    parsed = parse_tool_call_arguments(call.arguments)
    if parsed.parse_failed or call.arguments is None:
        return ToolCallEvent(
            step_uuid=step_uuid, tool_call_id=call.id, name=call.name, arguments=call.arguments
        )
    return ToolCallEvent(
        step_uuid=step_uuid, tool_call_id=call.id, name=call.name, args=parsed.data, arguments=call.arguments
    )


def failed_outcome(error: str, steps: int) -> TurnOutcome:
    return TurnOutcome("failed", error=error, steps=steps)


def model_failure_text(error: ModelError) -> str:
    """What the thread and the wire log are told; model errors carry no provider body
    (agent/model/errors.py), and redaction covers a URL or token from anywhere else."""
    return f"the model endpoint failed ({type(error).__name__}: {redact_text(str(error))[:300]})"
