"""Fork (context-core.md §6): the compatibility checks, and the history a fork starts from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.delegation import texts
from agent.messages import Message
from agent.projection.inherited import close_trailing_open_tool_exchange

PRIMARY_MODEL = "primary"


@dataclass(frozen=True)
class OwnBinding:
    """What the forking agent is: its profile and its model's name."""

    profile_name: str | None = None
    model_alias: str | None = None


def fork_incompatibility(
    *, resume: str | None, subagent_type: str | None, model: str | None, own: OwnBinding
) -> str | None:
    """The first reason a fork with these arguments is refused, or None (checked in spec order)."""
    if resume is not None and resume.strip():
        return texts.FORK_WITH_RESUME_UNAVAILABLE
    if subagent_type and subagent_type != own.profile_name:
        return texts.FORK_WITH_TYPE_UNAVAILABLE
    if model is not None and model not in (PRIMARY_MODEL, own.model_alias):
        return texts.FORK_WITH_MODEL_UNAVAILABLE
    return None


def fork_seed(history: Sequence[Message]) -> list[Message]:
    """The inherited snapshot: the parent's history with every call still in flight (the fork's
    own call among them) closed by the inherited-in-flight result."""
    return close_trailing_open_tool_exchange(history)


def fork_prompt(prompt: str) -> str:
    """The fork's task, with the one-time notice that the history above is inherited."""
    return f"{texts.FORK_CONTEXT_NOTICE}\n\n{prompt}"
