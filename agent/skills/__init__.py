"""Skills (context-core.md §6): SKILL.md files, their catalog, argument expansion and the Skill tool."""

from agent.skills._activation import activation_message, render_skill
from agent.skills._catalog import SkillCatalog, SkillRoot, listing_text, session_skill_roots
from agent.skills._expansion import expand_arguments, split_arguments
from agent.skills._model import Skill, SkillParseError
from agent.skills._parsing import parse_skill_file, parse_skill_text
from agent.skills.tool import MAX_SKILL_QUERY_DEPTH, NestedSkillTooDeep, SkillTool

__all__ = [
    "MAX_SKILL_QUERY_DEPTH",
    "NestedSkillTooDeep",
    "Skill",
    "SkillCatalog",
    "SkillParseError",
    "SkillRoot",
    "SkillTool",
    "activation_message",
    "expand_arguments",
    "listing_text",
    "parse_skill_file",
    "parse_skill_text",
    "render_skill",
    "session_skill_roots",
    "split_arguments",
]
