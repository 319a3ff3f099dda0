"""A skill: a reusable method (a SKILL.md file) that changes how a task is approached (context-core.md §6)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SkillType = Literal["inline", "flow", "reference"]
SkillSource = Literal["workspace", "shared"]


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    type: SkillType
    body: str
    path: Path  # the SKILL.md file
    source: SkillSource
    when_to_use: str | None = None
    disable_model_invocation: bool = False
    is_sub_skill: bool = False
    safe: bool = False
    arguments: tuple[str, ...] = ()

    @property
    def directory(self) -> Path:
        return self.path.parent

    @property
    def model_invocable(self) -> bool:
        """Inline and not marked user-only: the Skill tool may load it."""
        return self.type == "inline" and not self.disable_model_invocation

    @property
    def listed_for_model(self) -> bool:
        """Shown in the model's skill listing: model-invocable and not a sub-skill."""
        return self.model_invocable and not self.is_sub_skill


@dataclass(frozen=True)
class SkillParseError:
    """A SKILL.md that could not be read: which file, and why."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"
