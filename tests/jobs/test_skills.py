"""Skills from Slack (jobs side): listing with parse errors, and a person's invocation as input."""

from __future__ import annotations

from pathlib import Path

from agent.fold import fold
from jobs.keys import SessionKey
from jobs.queues import TURNS_QUEUE, queue
from jobs.session.store import SessionStore
from jobs.settings import Settings
from jobs.skills import invoke_skill, list_skills
from jobs.turn.workspace import workspace_path

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")


def settings_with_skills(tmp_path: Path) -> Settings:
    settings = Settings(AGENT_WORKDIR=tmp_path / "ws", SHARED_SKILLS_DIR=tmp_path / "shared")
    own = workspace_path(settings, KEY) / ".threadline" / "skills"
    files = {
        own / "deploy" / "SKILL.md": "---\nname: deploy\ndescription: ship it\n"
        "disable-model-invocation: true\narguments: [env]\n---\nDeploy to $env.",
        own / "broken" / "SKILL.md": "---\nname: broken\ndescription: x\ntype: agent\n---\n",
        tmp_path / "shared" / "lint" / "SKILL.md": "---\nname: lint\ndescription: lint the code\n---\nLint.",
        tmp_path / "shared" / "notes" / "SKILL.md": "---\nname: notes\ndescription: ref\n"
        "type: reference\n---\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True)
        path.write_text(text)
    return settings


def test_the_listing_shows_who_may_invoke_each_skill_and_the_broken_files(tmp_path: Path):
    listing = list_skills(settings_with_skills(tmp_path), KEY)
    assert [(s.name, s.audience, s.source) for s in listing.skills] == [
        ("deploy", "people only", "workspace"),
        ("lint", "model and people", "shared"),
        ("notes", "nobody (reference)", "shared"),
    ]
    (error,) = listing.errors
    assert error.endswith(
        'broken/SKILL.md: Skill type "agent" is not supported; '
        'only "prompt", "inline", and "flow" are supported.'
    )
    assert "Skills that could not be read:" in listing.text()


def test_without_a_session_only_shared_skills_are_listed(tmp_path: Path):
    listing = list_skills(settings_with_skills(tmp_path), None)
    assert [s.name for s in listing.skills] == ["lint", "notes"] and listing.errors == []


def test_a_person_invokes_a_user_only_skill_and_it_starts_a_turn(redis, tmp_path: Path):
    settings = settings_with_skills(tmp_path)
    result = invoke_skill(redis, settings, KEY, "deploy", "staging", by="W9", ts="1700000000.000200")
    assert result.ok and "Started a turn" in result.message
    (message,) = fold(SessionStore(redis, KEY).read_wire())
    assert message.origin.kind == "skill_activation" and message.origin.trigger == "user-slash"
    assert message.origin.model_extra["user"] == "W9"
    assert "Deploy to staging." in message.text() and message.text().startswith("<@W9> asked for the skill")
    assert queue(redis, TURNS_QUEUE).count == 1


def test_unknown_and_reference_skills_are_refused(redis, tmp_path: Path):
    settings = settings_with_skills(tmp_path)
    assert not invoke_skill(redis, settings, KEY, "nope", "", by="W9", ts="1.2").ok
    refused = invoke_skill(redis, settings, KEY, "notes", "", by="W9", ts="1.3")
    assert not refused.ok and "reference skill" in refused.message
    assert SessionStore(redis, KEY).read_wire() == []
