"""Small pieces the loop records or reports: a call's wire event and failure outcomes."""

from __future__ import annotations

from typing import Any

from agent.loop.ports import TurnOutcome
from agent.messages import ToolCall
from agent.model.base import ModelRequest, ModelResponse, Usage
from agent.model.errors import ModelError
from agent.redaction import redact_text
from agent.tokens import estimate_message
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


def step_usage(response: ModelResponse, request: ModelRequest, overhead: int) -> dict[str, Any]:
    """What the answer cost, as the provider reported it; without a report (or an empty one: no
    real request takes 0 tokens), our estimate of the request and the answer, labelled as one."""
    reported = response.usage
    if reported is not None and (reported.input_tokens or reported.output_tokens):
        return reported.model_dump()
    estimate = Usage(
        input_tokens=overhead + sum(estimate_message(message) for message in request.messages),
        output_tokens=estimate_message(response.message),
        estimated=True,
    )
    return estimate.model_dump()
