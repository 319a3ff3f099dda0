"""Sub-agents (context-core.md §6): the Agent and AgentSwarm tools, fork, and how answers come back."""

from agent.delegation._agent_tool import AgentParams, AgentTool
from agent.delegation._binding import MAX_AGENT_DEPTH, AgentBinding
from agent.delegation._fork import OwnBinding, fork_incompatibility, fork_prompt, fork_seed
from agent.delegation._swarm_tool import MAX_SWARM_AGENTS, AgentSwarmParams, AgentSwarmTool
from agent.delegation.launcher import (
    ChildSpec,
    Spawned,
    SpawnRefused,
    SpawnRequest,
    SubagentLauncher,
    SwarmRequest,
)
from agent.delegation.results import SUBAGENT_RESULT, ChildOutcome, background_message, swarm_result

__all__ = [
    "MAX_AGENT_DEPTH",
    "MAX_SWARM_AGENTS",
    "SUBAGENT_RESULT",
    "AgentBinding",
    "AgentParams",
    "AgentSwarmParams",
    "AgentSwarmTool",
    "AgentTool",
    "ChildOutcome",
    "ChildSpec",
    "OwnBinding",
    "SpawnRefused",
    "SpawnRequest",
    "Spawned",
    "SubagentLauncher",
    "SwarmRequest",
    "background_message",
    "fork_incompatibility",
    "fork_prompt",
    "fork_seed",
    "swarm_result",
]
