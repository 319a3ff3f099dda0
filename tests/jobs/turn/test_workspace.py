import os
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


ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="only a root worker hands workspaces over")


@ROOT_ONLY
def test_a_root_worker_hands_new_cloned_and_older_workspaces_to_the_sandbox_uid(tmp_path: Path):
    settings = Settings.load(AGENT_WORKDIR=tmp_path / "ws", SHELL_SANDBOX_UID=4321)
    older = workspace_path(settings, KEY)
    (older / "src").mkdir(parents=True)  # made before the sandbox was on: root's
    (older / "src" / "app.py").write_text("print(1)\n")
    path = ensure_workspace(settings, KEY)
    owners = {(p.stat().st_uid, p.stat().st_gid) for p in [path, *path.rglob("*")]}
    assert owners == {(4321, 4321)}
    fresh = ensure_workspace(settings, KEY.model_copy(update={"thread_ts": "1700000000.000200"}))
    assert (fresh.stat().st_uid, fresh.stat().st_gid) == (4321, 4321)


@ROOT_ONLY
def test_with_the_sandbox_off_workspaces_keep_the_workers_owner(tmp_path: Path):
    settings = Settings.load(AGENT_WORKDIR=tmp_path / "ws", SHELL_SANDBOX="off")
    assert ensure_workspace(settings, KEY).stat().st_uid == 0
