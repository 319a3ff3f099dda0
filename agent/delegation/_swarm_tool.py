"""The `AgentSwarm` tool: one sub-agent per item of a list, answers aggregated in item order.

At most `MAX_SWARM_AGENTS` sub-agents per call; how many run at once is the launcher's
bound (AGENT_SWARM_MAX_CONCURRENCY). One item failing is reported in its place and does
not fail the swarm.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from agent.delegation import texts
from agent.delegation._binding import MAX_AGENT_DEPTH, AgentBinding
from agent.delegation._fork import fork_incompatibility, fork_prompt, fork_seed
from agent.delegation.launcher import ChildSpec, SpawnRefused, SwarmRequest
from agent.offload import in_thread
from agent.tools import accesses as acc
from agent.tools.accesses import Access
from agent.tools.base import Tool, ToolContext, ToolResult, error_result
from agent.tools.builtin.common import Params

MAX_SWARM_AGENTS = 128  # the reference's limit per call, items and resumed agents together
ITEM_PLACEHOLDER = "{{item}}"
UNBOUND_TEXT = "Sub-agents are not available in this session."


class AgentSwarmParams(Params):
    description: str = Field(description="A short (3-5 word) name for the whole swarm.")
    prompt_template: str = Field(
        description="The task for each sub-agent; {{item}} is replaced by that sub-agent's item."
    )
    items: list[str] = Field(
        default_factory=list, max_length=MAX_SWARM_AGENTS, description="One sub-agent per item."
    )
    subagent_type: str | None = Field(default=None, description='"coder" (default) or "explore".')
    fork: bool = Field(default=False, description="Give every sub-agent a snapshot of this conversation.")
    resume_agent_ids: dict[str, str] | None = Field(
        default=None, description="Earlier sub-agents to continue too: agent_id → its new prompt."
    )
    model: str | None = Field(default=None, description='Leave out, or "primary".')

    @model_validator(mode="after")
    def _shape(self) -> AgentSwarmParams:
        total = len(self.items) + len(self.resume_agent_ids or {})
        if total == 0:
            raise ValueError("give at least one item (or resume_agent_ids)")
        if total > MAX_SWARM_AGENTS:
            raise ValueError(f"at most {MAX_SWARM_AGENTS} sub-agents per swarm, items and resumed together")
        if self.items and ITEM_PLACEHOLDER not in self.prompt_template:
            raise ValueError("prompt_template must contain {{item}}")
        return self


class AgentSwarmTool(Tool[AgentSwarmParams]):
    name = "AgentSwarm"
    description = (
        "Run the same task over many items, one sub-agent per item, in this workspace. The call's "
        "result lists every item's answer in item order; a failed item is reported in its place."
    )
    parameters = AgentSwarmParams

    def __init__(self, binding: AgentBinding | None = None) -> None:
        self.binding = binding

    def unavailable_reason(self) -> str | None:
        if self.binding is None:
            return UNBOUND_TEXT
        return None if self.binding.may_delegate else texts.too_deep(MAX_AGENT_DEPTH)

    def accesses(self, args: AgentSwarmParams, context: ToolContext) -> tuple[Access, ...]:
        return acc.none()

    async def run(self, args: AgentSwarmParams, context: ToolContext) -> ToolResult:
        binding = self.binding
        assert binding is not None
        try:
            request = self._request(args, binding, context.tool_call_id)
            await in_thread(binding.launcher.spawn_swarm, request)
        except SpawnRefused as refused:
            return error_result(str(refused))
        return ToolResult(
            f'Swarm "{args.description}" is working on {len(request.children)} items.', deferred=True
        )

    def _request(self, args: AgentSwarmParams, binding: AgentBinding, call_id: str) -> SwarmRequest:
        resumed = args.resume_agent_ids or {}
        if args.fork and resumed:
            raise SpawnRefused(texts.SWARM_FORK_WITH_RESUME)
        if args.fork:
            refusal = fork_incompatibility(
                resume=None, subagent_type=args.subagent_type, model=args.model, own=binding.own
            )
            if refusal is not None:
                raise SpawnRefused(refusal)
        profile = binding.profile if args.fork else binding.child_profile(args.subagent_type)
        model = binding.model if args.fork else binding.child_model(args.model)
        seed = fork_seed(binding.history()) if args.fork else ()
        children, labels = [], []
        for item in args.items:
            prompt = args.prompt_template.replace(ITEM_PLACEHOLDER, item)
            children.append(
                ChildSpec(
                    prompt=fork_prompt(prompt) if args.fork else prompt,
                    description=item,
                    profile=profile,
                    model=model,
                    seed=seed,
                )
            )
            labels.append(item)
        for agent_id, prompt in resumed.items():
            children.append(ChildSpec(prompt=prompt, description=agent_id, profile=profile, resume=agent_id))
            labels.append(f"resume {agent_id}")
        return SwarmRequest(call_id, args.description, children, labels)
