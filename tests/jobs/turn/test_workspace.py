import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.testing import LocalServer, QuietHandler
from jobs.forge.branch import recorded_base
from jobs.keys import SessionKey
from jobs.settings import Settings
from jobs.turn.workspace import WorkspaceError, disk_bytes, ensure_workspace, remove_workspace, workspace_path

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
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert recorded_base(path) == head.stdout.strip()  # what a pull request starts from, kept beside it

    remove_workspace(settings, KEY)
    assert recorded_base(path) is None and not path.exists()


def test_sessions_of_a_repository_channel_share_one_object_store(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bulk.bin").write_bytes(os.urandom(400_000))  # incompressible: a clone's pack holds it
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "bulk"], check=True)
    settings = Settings.load(AGENT_WORKDIR=tmp_path / "ws", CHANNEL_REPOS={"C1": str(repo)})
    other_key = KEY.model_copy(update={"thread_ts": "1700000000.000200"})
    first, second = ensure_workspace(settings, KEY), ensure_workspace(settings, other_key)
    stores = set()
    for path in (first, second):
        (alternate,) = (path / ".git/objects/info/alternates").read_text().split()
        stores.add(Path(alternate))
        assert disk_bytes(path / ".git/objects") < 100_000  # the 400 kB lives in the shared store
        assert (path / "bulk.bin").stat().st_size == 400_000
    (store,) = stores
    assert store.is_dir() and (tmp_path / "ws").resolve() in store.parents
    remove_workspace(settings, KEY)
    assert store.is_dir() and not first.exists()
    in_second = ["git", "-c", "safe.directory=*", "-C", str(second)]  # a root run hands it to the sandbox uid
    log = subprocess.run([*in_second, "log", "--oneline"], capture_output=True, text=True)
    status = subprocess.run([*in_second, "status", "--short"], capture_output=True, text=True)
    assert "bulk" in log.stdout and log.returncode == 0
    assert status.returncode == 0 and status.stdout == ""


def test_a_repository_that_cannot_be_cloned_is_a_clear_error(tmp_path: Path):
    settings = Settings.load(AGENT_WORKDIR=tmp_path / "ws", CHANNEL_REPOS={"C1": str(tmp_path / "missing")})
    with pytest.raises(WorkspaceError, match="could not clone"):
        ensure_workspace(settings, KEY)
    assert not workspace_path(settings, KEY).exists()  # no half workspace left behind


class _NoSuchRepository(QuietHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def git_server() -> Iterator[str]:
    """A local HTTP server on which every repository is missing (git then repeats the URL)."""
    server = LocalServer(_NoSuchRepository, "no-such-repository")
    server.start()
    yield "{}:{}".format(*server.address)
    server.stop()


@pytest.mark.parametrize(
    ("template", "shown"),
    [
        ("http://x-access-token:{secret}@{host}/o/r.git", "http://x-access-token:***@{host}/o/r.git"),
        ("http://{secret}@{host}/o/r.git", "http://***@{host}/o/r.git"),
        ("http://{host}/o/r.git?private_token={secret}", "http://{host}/o/r.git?private_token=***"),
    ],
)
def test_a_failed_clone_names_the_repository_without_its_token(
    tmp_path: Path, git_server: str, template: str, shown: str
):
    secret = "planted-repo-token-0c7d1e"
    repository = template.format(secret=secret, host=git_server)
    settings = Settings.load(AGENT_WORKDIR=tmp_path / "ws", CHANNEL_REPOS={"C1": repository})
    with pytest.raises(WorkspaceError) as raised:
        ensure_workspace(settings, KEY)
    message = str(raised.value)
    assert message.startswith(f"could not clone {shown.format(host=git_server)} for this channel: ")
    assert "not found" in message  # git's own words are kept, with the URL it repeats redacted
    assert secret not in message
    assert raised.value.__cause__ is None and raised.value.__context__ is None


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
