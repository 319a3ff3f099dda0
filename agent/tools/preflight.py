"""Everything checked before a call may run, in the spec's order (4.2).

`preflight_call` does steps 1-8 synchronously: parse, find the tool, guard veto, availability,
schema validation, resolving the execution (path security), the abort check, a ready
result. It returns either the result the model gets instead of running the tool, or a
`PreparedCall` carrying the permission decision (step 9), which the executor settles
(`settle_permission`) because asking a person takes time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent.messages import ToolCall
from agent.tools import texts
from agent.tools.arguments import parse_tool_call_arguments
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult, error_result
from agent.tools.cancel import CancelSignal
from agent.tools.output import failure_result
from agent.tools.policy import (
    Allow,
    ApprovalRequest,
    Approved,
    Approver,
    Ask,
    CallSource,
    Decision,
    Deny,
    Expired,
    PermissionPolicy,
    RecordedDecisions,
    Rejected,
    ToolGuard,
)
from agent.tools.registry import ToolRegistry
from agent.tools.workspace import PathSecurityError

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(slots=True)
class PreparedCall:
    call: ToolCall
    tool: Tool[Any]
    arguments: Any
    context: ToolContext
    execution: ToolExecution
    decision: Decision


def _pydantic_errors(error: ValidationError) -> str:
    return "; ".join(
        f"/{'/'.join(str(part) for part in item['loc'])} {item['msg']}" if item["loc"] else item["msg"]
        for item in error.errors()
    )


def _validate(registry: ToolRegistry, tool: Tool[Any], call: ToolCall) -> BaseModel | ToolResult:
    parsed = parse_tool_call_arguments(call.arguments)
    errors = registry.validator(tool.name).describe(parsed.data)
    if parsed.parse_failed:
        return error_result(
            texts.invalid_args(tool.name, errors or texts.INVALID_JSON),
            note=texts.invalid_json_note(parsed.error or "parse error"),
        )
    if errors is not None:
        return error_result(texts.invalid_args(tool.name, errors))
    try:
        return tool.parameters.model_validate(parsed.data)
    except ValidationError as error:  # the model's own checks beyond the JSON schema
        return error_result(texts.invalid_args(tool.name, _pydantic_errors(error)))


def preflight_call(
    call: ToolCall,
    *,
    registry: ToolRegistry,
    workspace: Path,
    signal: CancelSignal,
    guard: ToolGuard,
    policy: PermissionPolicy,
    source: CallSource = "model",
) -> PreparedCall | ToolResult:
    tool = registry.get(call.name)
    if tool is None:
        return error_result(registry.describe_missing(call.name))
    veto = guard.veto(call.name, source)
    if veto is not None:
        return error_result(veto)
    unavailable = tool.unavailable_reason()
    if unavailable is not None:
        return error_result(unavailable)
    args = _validate(registry, tool, call)
    if isinstance(args, ToolResult):
        return args
    context = ToolContext(workspace=workspace, signal=signal, tool_call_id=call.id, tool_name=call.name)
    try:
        execution = tool.resolve_execution(args, context)
    except PathSecurityError as error:
        return error_result(str(error))
    except Exception as error:
        return error_result(texts.resolve_failed(tool.name, str(error) or type(error).__name__))
    if signal.cancelled:
        return error_result(signal.aborted_text(call.name))
    if isinstance(execution, ToolResult):
        return execution
    decision = policy.decide(tool, args, call.id)
    if isinstance(decision, Deny):
        if decision.by == "rule":
            return error_result(texts.denied_by_rule(call.name, decision.reason))
        return error_result(texts.denied_by_policy(call.name))
    return PreparedCall(call, tool, args, context, execution, decision)


async def settle_permission(
    prepared: PreparedCall, approver: Approver | None, signal: CancelSignal
) -> ToolResult | None:
    """None when the call may run; otherwise the result the model gets instead."""
    decision = prepared.decision
    if isinstance(decision, Allow):
        return None
    assert isinstance(decision, Ask)
    name = prepared.call.name
    reason: str | ToolResult | None = decision.reason
    if not isinstance(approver, RecordedDecisions):  # replayed decisions ask nobody: no preview
        reason = await asking_reason(prepared, decision, signal)
    if isinstance(reason, ToolResult):
        return reason
    if approver is None:
        return error_result(texts.approval_cancelled(name))
    request = ApprovalRequest(prepared.call.id, name, prepared.arguments, reason)
    answer = await until_cancelled(approver(request), signal)
    if signal.cancelled:
        return error_result(texts.aborted(name, signal.reason or "aborted"))
    if answer.exception() is not None:
        log.error("approver failed for %s (%s)", name, prepared.call.id, exc_info=answer.exception())
        return error_result(texts.approval_cancelled(name))
    reply = answer.result()
    if isinstance(reply, Approved):
        return None
    if isinstance(reply, Rejected):
        return error_result(texts.approval_rejected(name, reply.feedback))
    if isinstance(reply, Expired):
        return error_result(texts.approval_expired(name, reply.after))
    return error_result(texts.approval_cancelled(name))


async def asking_reason(
    prepared: PreparedCall, decision: Ask, signal: CancelSignal
) -> str | ToolResult | None:
    """The policy's reason followed by the call's preview, if it has one: what a person asked
    about the call reads. A ToolResult instead when nobody should be asked: the preview failed
    (its error, as the call's result) or the call was stopped meanwhile."""
    if prepared.execution.preview is None:
        return decision.reason
    previewed = await until_cancelled(prepared.execution.preview(), signal)
    if signal.cancelled:
        return error_result(texts.aborted(prepared.call.name, signal.reason or "aborted"))
    failed = previewed.exception()
    if failed is not None:
        return failure_result(prepared.call.name, failed)
    return "\n".join(part for part in (decision.reason, previewed.result()) if part)


async def until_cancelled(work: Awaitable[T], signal: CancelSignal) -> asyncio.Future[T]:
    """`work`, done or dropped when the call is cancelled first; the future says which."""
    done = asyncio.ensure_future(work)
    cancelled = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({done, cancelled}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in (done, cancelled):
            if not waiter.done():
                waiter.cancel()
    return done
