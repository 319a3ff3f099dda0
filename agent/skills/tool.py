"""The `Skill` tool: the model loads an inline skill, which arrives as a steer (context-core.md §6).

A Skill tool instance belongs to one agent and knows its query depth (0 for a session a
person started, one more for each sub-agent level). At depth 3 or more it refuses with
`NestedSkillTooDeep` before looking anything up.
"""

from __future__ import annotations

from pydantic import Field

from agent.skills._activation import Trigger, activation_message
from agent.skills._catalog import SkillCatalog
from agent.tools import accesses as acc
from agent.tools.accesses import Access
from agent.tools.base import Tool, ToolContext, ToolResult, error_result
from agent.tools.builtin.common import Params

MAX_SKILL_QUERY_DEPTH = 3  # the reference's limit: a skill may load skills, but not without end
SKILL_NESTED_TOO_DEEP = "SKILL_NESTED_TOO_DEEP"
UNBOUND_TEXT = "Skills are not available in this session."


class NestedSkillTooDeep(RuntimeError):
    code = SKILL_NESTED_TOO_DEEP

    def __init__(self, skill: str, max_depth: int = MAX_SKILL_QUERY_DEPTH) -> None:
        super().__init__(
            f'Nested skill invocation "{skill}" exceeded the maximum depth of {max_depth} '
            "— refusing to recurse further."
        )


def not_found_text(name: str) -> str:
    return f'Skill "{name}" not found in the current skill listing.'


def user_only_text(name: str) -> str:
    return f'Skill "{name}" can only be triggered by the user (model invocation is disabled).'


def not_inline_text(name: str) -> str:
    return f'Skill "{name}" is not an inline skill and cannot be invoked by the model in v1.'


def loaded_text(name: str) -> str:
    return f'Skill "{name}" loaded inline. Follow its instructions.'


class SkillParams(Params):
    skill: str = Field(description="The name of the skill, as the skill listing gives it.")
    args: str | None = Field(default=None, description="Arguments for the skill, if it takes any.")


class SkillTool(Tool[SkillParams]):
    name = "Skill"
    description = (
        "Load a skill from the skill listing in the system prompt: its instructions arrive as a "
        "message right after this call's result, and you then follow them."
    )
    parameters = SkillParams

    def __init__(
        self,
        catalog: SkillCatalog | None = None,
        *,
        query_depth: int = 0,
        session_id: str = "",
    ) -> None:
        self._catalog = catalog
        self.query_depth = query_depth
        self.session_id = session_id

    def unavailable_reason(self) -> str | None:
        return UNBOUND_TEXT if self._catalog is None else None

    def accesses(self, args: SkillParams, context: ToolContext) -> tuple[Access, ...]:
        return acc.none()  # loading instructions touches no file the scheduler guards

    async def run(self, args: SkillParams, context: ToolContext) -> ToolResult:
        return self.invoke(args.skill, args.args or "")

    def invoke(self, name: str, args: str = "") -> ToolResult:
        if self.query_depth >= MAX_SKILL_QUERY_DEPTH:
            raise NestedSkillTooDeep(name)
        skill = self._catalog.get(name) if self._catalog is not None else None
        if skill is None:
            return error_result(not_found_text(name))
        if skill.disable_model_invocation:
            return error_result(user_only_text(name))
        if skill.type != "inline":
            return error_result(not_inline_text(name))
        trigger: Trigger = "nested-skill" if self.query_depth > 0 else "model-tool"
        steer = activation_message(skill, args, trigger, session_id=self.session_id)
        return ToolResult(loaded_text(skill.name), steer=steer)
