"""Sub-agent profiles (`subagent_type`): which tools a sub-agent may use.

`coder` (the default) has every tool of its parent; `explore` only reads. A profile never
adds a tool: a child runs with its parent's permission policy and approval rules, and a
parent may only start children whose profile is its own or narrower.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PROFILE = "coder"


@dataclass(frozen=True)
class Profile:
    name: str
    rank: int  # a parent may start children of equal or lower rank
    disabled_tools: frozenset[str] = frozenset()


PROFILES: dict[str, Profile] = {
    "coder": Profile("coder", rank=2),
    "explore": Profile(
        "explore",
        rank=1,
        disabled_tools=frozenset({"write_file", "edit_file", "shell", "Agent", "AgentSwarm"}),
    ),
}


def profile_named(name: str | None) -> Profile | None:
    return PROFILES.get(name or DEFAULT_PROFILE)
