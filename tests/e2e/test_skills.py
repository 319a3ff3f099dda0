"""Skills on real workers: the model sees the listing, loads a skill, and follows it; a person's
`!skill` starts a turn with the rendered skill."""

from __future__ import annotations

from pathlib import Path

from agent.testing import FakeLLM, calls, text
from jobs.settings import Settings
from jobs.skills import invoke_skill
from jobs.turn.workspace import workspace_path
from tests.e2e.agents import content_text, start_stack, wait_for_answer
from tests.e2e.turns import Session


def add_skill(root: Path, name: str, front: str, body: str) -> None:
    path = root / name / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(f"---\nname: {name}\n{front}\n---\n{body}")


def test_the_model_loads_a_listed_skill_and_follows_it(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    shared = tmp_path / "shared-skills"
    front = "description: write a changelog entry\nwhen-to-use: after a fix"
    add_skill(shared, "changelog", front, "Write $0.")
    add_skill(shared, "release", "description: cut a release\ndisable-model-invocation: true", "Release.")
    fake_llm.script(
        calls(("k1", "Skill", {"skill": "changelog", "args": "CHANGES.md"})),
        text("followed the skill"),
    )
    env = {"SHARED_SKILLS_DIR": str(shared)}
    stack = start_stack(tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=1, **env)
    try:
        session = Session(redis, fake_slack, "note the fix")
        wait_for_answer(session, "followed the skill")
        first, second = fake_llm.accepted()
        system = content_text(first["messages"][0])
        assert "- changelog: write a changelog entry When to use: after a fix" in system
        assert "release" not in system  # user-only skills are not offered to the model
        assert "Skill" in [tool["function"]["name"] for tool in first["tools"]]
        tail = second["messages"][-3:]
        assert [m["role"] for m in tail] == ["assistant", "tool", "user"]
        assert content_text(tail[1]) == 'Skill "changelog" loaded inline. Follow its instructions.'
        assert "Write CHANGES.md." in content_text(tail[2])
    finally:
        stack.stop()


def test_a_person_invokes_a_skill_from_the_thread(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    fake_llm.script(text("hi"), text("released"))
    stack = start_stack(tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=1)
    try:
        session = Session(redis, fake_slack, "hello")
        wait_for_answer(session, "hi")
        settings = Settings(AGENT_WORKDIR=tmp_path / "workspaces")
        add_skill(
            workspace_path(settings, session.key) / ".threadline" / "skills",
            "release",
            "description: cut a release\ndisable-model-invocation: true",
            "Cut release $ARGUMENTS.",
        )
        result = invoke_skill(redis, settings, session.key, "release", "v2.1", by="W222", ts="cmd-1")
        assert result.ok
        wait_for_answer(session, "released")
        last = fake_llm.accepted()[-1]["messages"][-1]
        assert last["role"] == "user" and "Cut release v2.1." in content_text(last)
    finally:
        stack.stop()
