"""What the Agent tools of one agent know about it: who it is, its history, its launcher."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent.delegation import texts
from agent.delegation._fork import PRIMARY_MODEL, OwnBinding
from agent.delegation.launcher import SpawnRefused, SubagentLauncher
from agent.delegation.profiles import DEFAULT_PROFILE, PROFILES, profile_named
from agent.messages import Message

MAX_AGENT_DEPTH = 3  # with MAX_SKILL_QUERY_DEPTH: a session 3 levels down delegates no further


@dataclass(frozen=True)
class AgentBinding:
    launcher: SubagentLauncher
    history: Callable[[], list[Message]]  # the agent's history as it is now (a fork's seed)
    depth: int = 0
    profile: str = DEFAULT_PROFILE
    model: str | None = None  # the agent's own model name

    @property
    def own(self) -> OwnBinding:
        return OwnBinding(profile_name=self.profile, model_alias=self.model)

    @property
    def may_delegate(self) -> bool:
        return self.depth < MAX_AGENT_DEPTH

    def child_profile(self, requested: str | None) -> str:
        """The profile a child gets; refused when unknown or wider than this agent's own."""
        profile = profile_named(requested)
        if profile is None:
            raise SpawnRefused(texts.unknown_profile(requested or "", sorted(PROFILES)))
        own = profile_named(self.profile)
        if own is not None and profile.rank > own.rank:
            raise SpawnRefused(texts.profile_not_allowed(profile.name, own.name))
        return profile.name

    def child_model(self, requested: str | None) -> str | None:
        """None keeps the configured model; only that model (or "primary") may be named."""
        if requested is None or requested in (PRIMARY_MODEL, self.model):
            return self.model
        raise SpawnRefused(texts.unknown_model(requested))
