"""The seam between the Agent tools and whatever runs sub-agents (RQ jobs, in this project).

The tools decide *what* to start (checks, fork seed, prompts); a `SubagentLauncher` starts
it and answers at once: the tool never waits for a sub-agent. A foreground call's result
is deferred (the loop parks the step and frees its worker); a background call returns a
handle and the answer arrives later as a message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from agent.messages import Message


class SpawnRefused(Exception):
    """The launcher cannot start this sub-agent; the message is for the model."""


@dataclass(frozen=True)
class ChildSpec:
    """One sub-agent to start: its task and how it runs."""

    prompt: str
    description: str
    profile: str
    model: str | None = None
    seed: Sequence[Message] = ()  # a fork's inherited history, before the prompt
    resume: str | None = None  # continue this existing sub-agent instead of starting one


@dataclass(frozen=True)
class SpawnRequest:
    tool_call_id: str
    child: ChildSpec
    background: bool = False


@dataclass(frozen=True)
class SwarmRequest:
    tool_call_id: str
    description: str
    children: list[ChildSpec] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)  # per child, shown in the aggregated result


@dataclass(frozen=True)
class Spawned:
    agent_id: str


class SubagentLauncher(Protocol):
    def spawn(self, request: SpawnRequest) -> Spawned: ...

    def spawn_swarm(self, request: SwarmRequest) -> list[Spawned]: ...
