"""Links committed in a channel's repository (CHANNEL_REPOS): a clone brings them into the
workspace with no shell and no approval, so the worker's own writes and reads must not follow
them out."""

import os
import subprocess
from pathlib import Path

import pytest

from agent.skills import SkillCatalog, session_skill_roots
from agent.tools.builtin import Grep
from jobs.keys import SessionKey
from jobs.settings import Settings
from jobs.turn.workspace import ensure_workspace
from tests.agent.tools.helpers import call, executor_with, run_one

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")


def repository_with_links(tmp_path: Path, outside: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".threadline").mkdir(parents=True)
    os.symlink(outside, repo / ".threadline" / "tool-results")
    os.symlink(outside, repo / ".threadline" / "skills")
    (repo / "wide.txt").write_text("".join(f"match {n} {'x' * 200}\n" for n in range(1000)))
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "links"], check=True)
    return repo


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "elsewhere"
    (path / "planted").mkdir(parents=True)
    (path / "planted" / "SKILL.md").write_text("---\nname: planted\ndescription: from outside\n---\nDo it.\n")
    return path


@pytest.mark.anyio
async def test_a_committed_link_at_the_spill_directory_gets_no_output_outside(tmp_path: Path, outside: Path):
    settings = Settings.load(
        AGENT_WORKDIR=tmp_path / "ws", CHANNEL_REPOS={"C1": str(repository_with_links(tmp_path, outside))}
    )
    workspace = ensure_workspace(settings, KEY)
    assert (workspace / ".threadline" / "tool-results").is_symlink()
    executor = executor_with(Grep(), workspace=workspace)
    result = await run_one(executor, call("g", "grep", {"pattern": "match", "max_results": 1000}))
    assert "could not be saved to a file" in result.output
    assert sorted(os.listdir(outside)) == ["planted"]


def test_a_committed_link_at_the_skills_directory_loads_no_skill_from_outside(tmp_path: Path, outside: Path):
    settings = Settings.load(
        AGENT_WORKDIR=tmp_path / "ws", CHANNEL_REPOS={"C1": str(repository_with_links(tmp_path, outside))}
    )
    workspace = ensure_workspace(settings, KEY)
    catalog = SkillCatalog.load(session_skill_roots(workspace, None))
    assert catalog.get("planted") is None
    assert [error.reason for error in catalog.errors] == [
        "a symbolic link leads outside the workspace; skipped"
    ]
