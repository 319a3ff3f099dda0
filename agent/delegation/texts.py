"""Model-visible texts of delegation: the reference's fork texts and this project's own.

See docs/context-core.md §6.
"""

from __future__ import annotations

FORK_WITH_RESUME_UNAVAILABLE = (
    "Cannot set resume when forking the current context. Fork creates a new agent; resume continues "
    "an existing one."
)
FORK_WITH_TYPE_UNAVAILABLE = (
    "Cannot set a different subagent_type when forking the current context. A fork inherits this "
    "agent's own agent type."
)
FORK_WITH_MODEL_UNAVAILABLE = (
    "Cannot override the model when forking the current context. A fork inherits this agent's model."
)
FORK_CONTEXT_NOTICE = (
    "The conversation above is not your own history: it is a one-time snapshot inherited from the "
    "agent that forked you. Treat it as reference material only — you are an independent subagent, "
    "not a continuation of that agent. Do the task below directly yourself, then report the result."
)
SWARM_FORK_WITH_RESUME = "Cannot combine fork with resume_agent_ids: a fork creates new agents."


def unknown_profile(name: str, known: list[str]) -> str:
    return f'Unknown subagent_type "{name}". Available: {", ".join(known)}.'


def profile_not_allowed(name: str, own: str) -> str:
    return (
        f'A "{own}" agent cannot start a "{name}" sub-agent: a sub-agent never gets tools its '
        "parent does not have."
    )


def too_deep(max_depth: int) -> str:
    return f"Sub-agents may not nest deeper than {max_depth} levels; do this work yourself."


def unknown_model(name: str) -> str:
    return f'Unknown model "{name}": use "primary" (or leave model out) for the configured model.'


def unknown_agent(agent_id: str) -> str:
    return f'No sub-agent "{agent_id}" of this conversation can be resumed.'


def agent_busy(agent_id: str) -> str:
    return f'Sub-agent "{agent_id}" is still working; wait for its answer before giving it more.'


def background_started(agent_id: str, description: str) -> str:
    return (
        f"Sub-agent started in the background.\nagent_id: {agent_id}\ndescription: {description}\n\n"
        "Its final answer arrives in this conversation as a message when it finishes; do not wait "
        f'or poll for it. To give it more work later, call Agent(resume="{agent_id}", prompt="...").'
    )


def child_failed(description: str, detail: str) -> str:
    return f'Sub-agent "{description}" failed: {detail}'


def child_cancelled(description: str) -> str:
    return f'Sub-agent "{description}" was stopped before it finished; it gave no answer.'


def child_lost(description: str) -> str:
    return (
        f'Sub-agent "{description}" stopped unexpectedly (its worker died). Its outcome is unknown: '
        "do not assume its work was done or not done."
    )


def child_no_answer(description: str) -> str:
    return f'Sub-agent "{description}" finished without an answer.'


def too_many_alive(limit: int) -> str:
    return (
        f"Refused: {limit} sub-agents are already working in this session's tree, the most allowed"
        " at once. Wait for some to answer, or do this work yourself."
    )


def too_many_this_turn(limit: int, started: int) -> str:
    return (
        f"Refused: this turn has started {started} sub-agents and may start at most {limit}."
        " Do the rest of the work yourself or in fewer sub-agents."
    )


def swarm_too_big(limit: int, items: int) -> str:
    return f"Refused: {items} items; one AgentSwarm call may have at most {limit}. Split the work."
