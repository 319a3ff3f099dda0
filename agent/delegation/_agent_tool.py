"""The `Agent` tool: hand a task to a sub-agent that works in the same workspace (context-core.md §6).

In the foreground the call's result is the sub-agent's final answer: the tool starts the
child and returns a deferred result, the loop parks the step (freeing its worker) and the
answer becomes the result when it arrives. In the background the call completes at once
with a handle; the answer arrives later as a message. `fork: true` gives the child this
agent's history (the inherited snapshot) instead of an empty one.
"""

from __future__ import annotations

from pydantic import Field

from agent.delegation import texts
from agent.delegation._binding import MAX_AGENT_DEPTH, AgentBinding
from agent.delegation._fork import fork_incompatibility, fork_prompt, fork_seed
from agent.delegation.launcher import ChildSpec, SpawnRefused, SpawnRequest
from agent.offload import in_thread
from agent.tools import accesses as acc
from agent.tools.accesses import Access
from agent.tools.base import Tool, ToolContext, ToolResult, error_result
from agent.tools.builtin.common import Params

UNBOUND_TEXT = "Sub-agents are not available in this session."


class AgentParams(Params):
    prompt: str = Field(description="The complete task for the sub-agent: it sees nothing else of yours.")
    description: str = Field(description="A short (3-5 word) name for the task, shown in the thread.")
    subagent_type: str | None = Field(
        default=None, description='"coder" (default: every tool you have) or "explore" (read-only).'
    )
    run_in_background: bool = Field(
        default=False,
        description="Return at once with a handle; the sub-agent's answer arrives later as a message.",
    )
    fork: bool = Field(
        default=False, description="Start the sub-agent with a snapshot of this conversation as context."
    )
    resume: str | None = Field(
        default=None, description="The agent_id of an earlier sub-agent to continue with this prompt."
    )
    model: str | None = Field(default=None, description='Leave out, or "primary".')


def working_text(description: str) -> str:
    return f'Sub-agent "{description}" is working on it.'


class AgentTool(Tool[AgentParams]):
    name = "Agent"
    description = (
        "Start a sub-agent on a self-contained task in this workspace. Its final answer becomes this "
        "call's result; several Agent calls in one step run in parallel."
    )
    parameters = AgentParams

    def __init__(self, binding: AgentBinding | None = None) -> None:
        self.binding = binding

    def unavailable_reason(self) -> str | None:
        if self.binding is None:
            return UNBOUND_TEXT
        return None if self.binding.may_delegate else texts.too_deep(MAX_AGENT_DEPTH)

    def accesses(self, args: AgentParams, context: ToolContext) -> tuple[Access, ...]:
        return acc.none()  # starting a child touches nothing; its own writes take the workspace lock

    async def run(self, args: AgentParams, context: ToolContext) -> ToolResult:
        binding = self.binding
        assert binding is not None  # unavailable_reason keeps an unbound tool from running
        try:
            request = SpawnRequest(context.tool_call_id, self._child(args, binding), args.run_in_background)
            spawned = await in_thread(binding.launcher.spawn, request)
        except SpawnRefused as refused:
            return error_result(str(refused))
        if args.run_in_background:
            return ToolResult(texts.background_started(spawned.agent_id, args.description))
        return ToolResult(working_text(args.description), deferred=True)

    def _child(self, args: AgentParams, binding: AgentBinding) -> ChildSpec:
        if args.fork:
            refusal = fork_incompatibility(
                resume=args.resume, subagent_type=args.subagent_type, model=args.model, own=binding.own
            )
            if refusal is not None:
                raise SpawnRefused(refusal)
            return ChildSpec(
                prompt=fork_prompt(args.prompt),
                description=args.description,
                profile=binding.profile,
                model=binding.model,
                seed=fork_seed(binding.history()),
            )
        return ChildSpec(
            prompt=args.prompt,
            description=args.description,
            profile=binding.child_profile(args.subagent_type),
            model=binding.child_model(args.model),
            resume=(args.resume or "").strip() or None,
        )
