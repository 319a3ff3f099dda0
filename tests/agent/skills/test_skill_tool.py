"""The Skill tool's invocation rules (context-core.md §6), vectors skill-01 and skill-02, its steer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent.skills import MAX_SKILL_QUERY_DEPTH, NestedSkillTooDeep, SkillCatalog, SkillRoot, SkillTool
from agent.skills.tool import SkillParams
from agent.tools.base import ToolContext
from agent.tools.cancel import CancelSignal
from tests.vectors import vectors_with_prefix

FRONT_KEYS = {"disable_model_invocation": "disable-model-invocation", "type": "type"}


def catalog_with(tmp_path: Path, *skills: tuple[str, dict, str]) -> SkillCatalog:
    for name, metadata, body in skills:
        lines = [
            f"{FRONT_KEYS.get(k, k)}: {str(v).lower() if isinstance(v, bool) else v}"
            for k, v in metadata.items()
        ]
        path = tmp_path / "skills" / name / "SKILL.md"
        path.parent.mkdir(parents=True)
        path.write_text(
            "\n".join(["---", f"name: {name}", f"description: the {name} skill", *lines, "---", body])
        )
    return SkillCatalog.load([SkillRoot(tmp_path / "skills", "workspace")])


def run(tool: SkillTool, skill: str, args: str | None = None):
    context = ToolContext(workspace=Path("."), signal=CancelSignal(), tool_call_id="c1", tool_name="Skill")
    return asyncio.run(tool.run(SkillParams(skill=skill, args=args), context))


def test_vector_skill_01_user_only(tmp_path: Path):
    (vector,) = [v for v in vectors_with_prefix("skill-01")]
    catalog = catalog_with(tmp_path, (vector["input"]["skill"], vector["input"]["metadata"], "deploy it"))
    result = run(SkillTool(catalog), vector["input"]["skill"])
    assert result.is_error is vector["expected"]["is_error"]
    assert result.output == vector["expected"]["output"]
    assert result.steer is None


def test_vector_skill_02_depth_guard(tmp_path: Path):
    (vector,) = [v for v in vectors_with_prefix("skill-02")]
    tool = SkillTool(catalog_with(tmp_path, ("x", {}, "body")), query_depth=vector["input"]["query_depth"])
    with pytest.raises(NestedSkillTooDeep) as raised:
        run(tool, vector["input"]["skill"])
    assert str(raised.value) == vector["expected"]["throws"]["message"]
    assert vector["expected"]["throws"]["code"].startswith(raised.value.code)
    assert vector["input"]["query_depth"] == MAX_SKILL_QUERY_DEPTH


def test_the_depth_guard_comes_before_the_lookup(tmp_path: Path):
    with pytest.raises(NestedSkillTooDeep):
        run(SkillTool(SkillCatalog(), query_depth=4), "missing")


def test_not_found_and_not_inline(tmp_path: Path):
    catalog = catalog_with(
        tmp_path, ("plan", {"type": "flow"}, "steps"), ("docs", {"type": "reference"}, "ref")
    )
    tool = SkillTool(catalog)
    assert run(tool, "nope").output == 'Skill "nope" not found in the current skill listing.'
    for name in ("plan", "docs"):
        result = run(tool, name)
        assert result.is_error
        assert (
            result.output
            == f'Skill "{name}" is not an inline skill and cannot be invoked by the model in v1.'
        )


def test_a_user_only_flow_skill_says_user_only_first(tmp_path: Path):
    catalog = catalog_with(tmp_path, ("plan", {"type": "flow", "disable_model_invocation": True}, "steps"))
    assert "can only be triggered by the user" in run(SkillTool(catalog), "plan").output


@pytest.mark.parametrize(("depth", "trigger"), [(0, "model-tool"), (1, "nested-skill"), (2, "nested-skill")])
def test_success_loads_inline_and_delivers_a_steer(tmp_path: Path, depth: int, trigger: str):
    catalog = catalog_with(tmp_path, ("review", {"arguments": "[file]"}, "Review $file carefully."))
    result = SkillTool(catalog, query_depth=depth, session_id="T1:C1:1.1").invoke("review", "app.py")
    assert not result.is_error and result.output == 'Skill "review" loaded inline. Follow its instructions.'
    steer = result.steer
    assert steer is not None and steer.role == "user"
    assert steer.origin is not None and steer.origin.kind == "skill_activation"
    assert steer.origin.trigger == trigger
    assert "Review app.py carefully." in steer.text()


def test_the_model_listing_hides_user_only_flow_and_sub_skills(tmp_path: Path):
    catalog = catalog_with(
        tmp_path,
        ("a-inline", {}, "x"),
        ("b-user", {"disable_model_invocation": True}, "x"),
        ("c-flow", {"type": "flow"}, "x"),
        ("d-sub", {"isSubSkill": True}, "x"),
    )
    assert [skill.name for skill in catalog.for_model()] == ["a-inline"]
    assert [skill.name for skill in catalog.all()] == ["a-inline", "b-user", "c-flow", "d-sub"]
