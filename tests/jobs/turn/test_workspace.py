import subprocess
from pathlib import Path

import pytest

from jobs.keys import SessionKey
from jobs.settings import Settings
from jobs.turn.workspace import WorkspaceError, ensure_workspace, workspace_path

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")


def test_each_session_gets_its_own_directory(tmp_path: Path):
    settings = Settings.load(AGENT_WORKDIR=tmp_path)
    path = ensure_workspace(settings, KEY)
    assert path == tmp_path.resolve() / "T1" / "C1" / "1700000000.000100" and path.is_dir()
    other = ensure_workspace(settings, KEY.model_copy(update={"thread_ts": "1700000000.000200"}))
    assert other != path


def test_a_channel_pointed_at_a_repository_starts_from_a_clone(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("hello from the team repo\n")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "."], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "init"], check=True)
    settings = Settings.load(AGENT_WORKDIR=tmp_path / "ws", CHANNEL_REPOS={"C1": str(repo)})
    path = ensure_workspace(settings, KEY)
    assert (path / "README.md").read_text() == "hello from the team repo\n"
    assert (path / ".git").is_dir()


def test_a_repository_that_cannot_be_cloned_is_a_clear_error(tmp_path: Path):
    settings = Settings.load(AGENT_WORKDIR=tmp_path / "ws", CHANNEL_REPOS={"C1": str(tmp_path / "missing")})
    with pytest.raises(WorkspaceError, match="could not clone"):
        ensure_workspace(settings, KEY)
    assert not workspace_path(settings, KEY).exists()  # no half workspace left behind
