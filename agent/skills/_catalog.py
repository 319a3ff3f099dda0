"""The skills a session can use: every `<root>/<name>/SKILL.md`, workspace first, then shared.

A workspace skill hides a shared one of the same name (the session's own copy is the more
specific one). Files that cannot be parsed are kept as errors, so `/agent skills` can say
which file is wrong and why instead of silently leaving a skill out.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agent.skills._model import Skill, SkillParseError, SkillSource
from agent.skills._parsing import parse_skill, parse_skill_file
from agent.tools import workspace as ws
from agent.tools.defaults import SKILL_FILE_MAX_BYTES

SKILL_FILE = "SKILL.md"
WORKSPACE_SKILLS_DIR = ".threadline/skills"  # inside the session workspace


OUTSIDE = "a symbolic link leads outside the workspace; skipped"


@dataclass(frozen=True)
class SkillRoot:
    """A directory of skills. `confined_to`: a workspace the directory lies in, whose files are
    read the one way into it (agent.tools.workspace): a workspace holds a repository's files and
    the agent's, and either may plant links to anywhere, FIFOs, or a SKILL.md of any size."""

    path: Path
    source: SkillSource
    confined_to: Path | None = None


@dataclass
class SkillCatalog:
    skills: dict[str, Skill] = field(default_factory=dict)
    errors: list[SkillParseError] = field(default_factory=list)

    @classmethod
    def load(cls, roots: Iterable[SkillRoot]) -> SkillCatalog:
        catalog = cls()
        for root in roots:
            catalog._load_root(root)
        return catalog

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name)

    def for_model(self) -> list[Skill]:
        """What the model's listing shows: model-invocable skills that are not sub-skills."""
        return [skill for skill in self.all() if skill.listed_for_model]

    def all(self) -> list[Skill]:
        return sorted(self.skills.values(), key=lambda skill: skill.name)

    def _load_root(self, root: SkillRoot) -> None:
        if root.confined_to is not None:
            self._load_confined(root, root.confined_to)
            return
        if not root.path.is_dir():
            return
        seen_here: set[str] = set()
        for directory in sorted(root.path.iterdir()):
            path = directory / SKILL_FILE
            if path.is_file():
                self._add(parse_skill_file(path, root.source), path, seen_here)

    def _load_confined(self, root: SkillRoot, workspace: Path) -> None:
        try:
            names = _subdirectories(workspace, root.path)
        except (FileNotFoundError, NotADirectoryError):
            return
        except ws.PathSecurityError:
            self.errors.append(SkillParseError(root.path, OUTSIDE))
            return
        except OSError as error:  # a loop of links: said, never a turn's crash
            self.errors.append(SkillParseError(root.path, f"cannot be read ({error.strerror or error})"))
            return
        seen_here: set[str] = set()
        for name in names:
            path = root.path / name / SKILL_FILE
            parsed = _read_confined(workspace, path, root.source)
            if parsed is not None:
                self._add(parsed, path, seen_here)

    def _add(self, parsed: Skill | SkillParseError, path: Path, seen_here: set[str]) -> None:
        if isinstance(parsed, SkillParseError):
            self.errors.append(parsed)
        elif parsed.name in seen_here:
            self.errors.append(SkillParseError(path, f'another skill here is also named "{parsed.name}"'))
        else:
            seen_here.add(parsed.name)
            self.skills.setdefault(parsed.name, parsed)  # an earlier root wins


def _subdirectories(workspace: Path, path: Path) -> list[str]:
    directory = ws.open_directory(workspace, path)
    try:
        with os.scandir(directory) as entries:
            return sorted(entry.name for entry in entries if not entry.is_file(follow_symlinks=False))
    finally:
        os.close(directory)


def _read_confined(workspace: Path, path: Path, source: SkillSource) -> Skill | SkillParseError | None:
    """The skill at `path`, None when there is no SKILL.md there."""
    try:
        text = ws.read_bytes(workspace, path, SKILL_FILE_MAX_BYTES).decode("utf-8")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except ws.PathSecurityError:
        return SkillParseError(path, OUTSIDE)
    except (ValueError, OSError, ws.NotAFileOrDirectory) as error:  # too large, not UTF-8, a FIFO…
        return SkillParseError(path, f"cannot be read ({error})")
    return parse_skill(text, path, source)


def session_skill_roots(workspace: Path, shared: Path | None) -> list[SkillRoot]:
    roots = [SkillRoot(workspace / WORKSPACE_SKILLS_DIR, "workspace", confined_to=workspace)]
    if shared is not None:
        roots.append(SkillRoot(shared, "shared"))
    return roots


def listing_text(skills: list[Skill]) -> str:
    """The skills section of the system prompt (empty when the model has no skill to use)."""
    if not skills:
        return ""
    lines = [
        "Skills: reusable methods written by the team. When one fits the task, call the Skill tool "
        "with its name (and args if it takes any) before starting; its instructions then arrive "
        "as a message."
    ]
    for skill in skills:
        line = f"- {skill.name}: {skill.description}"
        if skill.when_to_use:
            line += f" When to use: {skill.when_to_use}"
        lines.append(line)
    return "\n".join(lines)
