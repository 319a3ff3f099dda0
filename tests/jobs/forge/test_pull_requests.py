"""open_pull_request's worker side against a fake GitHub over HTTP (git's smart HTTP through the
real `git http-backend`, the pulls API) and a real Redis: what lands on the forge, what the
thread's card says, and every refusal in words. The workspace is written as the sandbox would
write it, hostile files included; git is never steered by them and never holds the token."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from agent.tools.builtin.common import ToolError
from gateway.sandbox.fake_forge import App, FakeForge
from jobs.forge.branch import BASE_BUNDLE, shadow_dir
from jobs.forge.pull_requests import NO_FORGE, ForgePullRequests
from jobs.keys import SessionKey, fixed_session_keys, pull_request_key
from jobs.session.notices import PullRequestNotice
from jobs.session.store import SessionStore
from jobs.settings import Settings
from jobs.turn.mirrors import channel_mirror
from jobs.turn.workspace import ensure_workspace
from tests.conftest import FORGE_TOKEN

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")
BRANCH = "threadline/c1-1700000000000100"


def settings_for(tmp_path: Path, forge: FakeForge, **more: object) -> Settings:
    repo = {"url": f"{forge.url}/acme/app.git", "forge": "github", "repo": "acme/app", "base": "main"}
    values: dict[str, object] = {
        "AGENT_WORKDIR": tmp_path / "ws",
        "CHANNEL_REPOS": {"C1": repo},
        "GITHUB_TOKEN": FORGE_TOKEN,
        "GITHUB_API_URL": forge.api_url,
        "COMMIT_AUTHOR_NAME": "Threadline Bot",
        "COMMIT_AUTHOR_EMAIL": "bot@example.com",
        **more,
    }
    return Settings.load(**values)


def port(redis, settings: Settings) -> ForgePullRequests:  # type: ignore[no-untyped-def]
    workspace = ensure_workspace(settings, KEY)
    return ForgePullRequests(SessionStore(redis, KEY), settings, workspace, channel_mirror(settings, "C1"))


def cards(redis) -> list[PullRequestNotice]:  # type: ignore[no-untyped-def]
    store = SessionStore(redis, KEY)
    return [n for _, n in store.notices() if isinstance(n, PullRequestNotice)]


def test_the_workspace_becomes_one_pull_request_that_later_pushes_update(tmp_path, forge, redis):
    settings = settings_for(tmp_path, forge)
    pulls = port(redis, settings)
    (pulls.workspace / "src" / "app.py").write_text("print('v2')\n")
    (pulls.workspace / "NOTES.md").write_text("new\n")

    preview = pulls.preview(None)
    said = pulls.publish("Fix the app", "It printed v1.", None)

    assert f"`{BRANCH}` to acme/app, base `main`" in preview and "2 files changed" in preview
    [pull] = forge.pulls()
    assert (pull.title, pull.head, pull.base) == ("Fix the app", BRANCH, "main")
    assert said.startswith(f"Opened pull request #1: {forge.url}/acme/app/pull/1")
    assert forge.file_at("acme/app", BRANCH, "src/app.py") == "print('v2')\n"
    assert forge.file_at("acme/app", BRANCH, "NOTES.md") == "new\n"
    bare = str(forge.bare("acme/app"))
    log = subprocess.run(
        ["git", "-C", bare, "log", "-1", "--format=%an <%ae>%n%B", BRANCH], capture_output=True, text=True
    ).stdout
    assert log.startswith("Threadline Bot <bot@example.com>\nFix the app\n") and f"Slack-Thread: {KEY}" in log

    (pulls.workspace / "docs.md").write_text("also the docs\n")
    again = pulls.publish("Fix the app and its docs", "Now with docs.", None)

    assert len(forge.pulls()) == 1 and forge.pulls()[0].title == "Fix the app and its docs"
    assert again.startswith("Updated pull request #1") and forge.file_at("acme/app", BRANCH, "docs.md")
    assert [(c.number, c.pushes, c.stat) for c in cards(redis)] == [
        (1, 1, "2 files changed, 2 insertions(+), 1 deletion(-)"),
        (1, 2, "3 files changed, 3 insertions(+), 1 deletion(-)"),  # the whole pull request
    ]
    assert json.loads(redis.get(pull_request_key(KEY)))["card"]["branch"] == BRANCH
    assert pull_request_key(KEY) in fixed_session_keys(KEY)  # retention and purge remove it with the session


def test_nothing_changed_and_no_forge_are_refused_in_words(tmp_path, forge, redis):
    pulls = port(redis, settings_for(tmp_path, forge))
    with pytest.raises(ToolError, match="nothing in the workspace changed"):
        pulls.preview(None)
    plain = Settings.load(AGENT_WORKDIR=tmp_path / "ws2", CHANNEL_REPOS={"C1": f"{forge.url}/acme/app.git"})
    with pytest.raises(ToolError) as refused:
        ForgePullRequests(SessionStore(redis, KEY), plain, tmp_path, None).preview(None)
    assert str(refused.value) == NO_FORGE
    assert not forge.pulls() and forge.head_of("acme/app", BRANCH) is None


def test_a_token_without_a_right_is_told_which_right(tmp_path, forge, redis):
    forge.grant("read-only", "contents")
    settings = settings_for(tmp_path, forge)
    pulls = port(redis, settings)
    (pulls.workspace / "README.md").write_text("changed\n")
    forge.grant(FORGE_TOKEN, "contents")  # may push, may not open pull requests

    with pytest.raises(ToolError, match="lacks the right this needs: pull_requests=write"):
        pulls.publish("t", "b", None)

    forge.grant(FORGE_TOKEN, "pull_requests")  # may not push
    with pytest.raises(ToolError, match="contents=write"):
        pulls.publish("t", "b", "other-name")
    assert not forge.pulls()


def test_a_push_refused_by_branch_protection_says_so(tmp_path, forge, redis):
    forge.protect("acme/app", BRANCH)
    pulls = port(redis, settings_for(tmp_path, forge))
    (pulls.workspace / "README.md").write_text("changed\n")
    with pytest.raises(ToolError, match="branch protection refused the push"):
        pulls.publish("t", "b", None)
    assert forge.head_of("acme/app", BRANCH) is None and not forge.pulls()


def test_a_branch_with_commits_from_elsewhere_is_left_alone(tmp_path, forge, redis):
    pulls = port(redis, settings_for(tmp_path, forge))
    main = forge.head_of("acme/app", "main")
    bare = str(forge.bare("acme/app"))
    subprocess.run(["git", "-C", bare, "update-ref", f"refs/heads/{BRANCH}", str(main)], check=True)
    (pulls.workspace / "README.md").write_text("changed\n")
    with pytest.raises(ToolError, match="commits not pushed from this thread"):
        pulls.publish("t", "b", None)
    assert forge.head_of("acme/app", BRANCH) == main


def test_a_branch_pushed_before_its_pull_request_failed_gets_it_later_without_a_second_push(
    tmp_path, forge, redis
):
    pulls = port(redis, settings_for(tmp_path, forge))
    (pulls.workspace / "README.md").write_text("changed\n")
    forge.grant(FORGE_TOKEN, "contents")  # the push lands, the pull request call is refused
    with pytest.raises(ToolError, match="was pushed, but the token lacks"):
        pulls.publish("t", "b", None)
    pushed = forge.head_of("acme/app", BRANCH)
    forge.grant(FORGE_TOKEN, "contents", "pull_requests")

    said = pulls.publish("t", "b", None)

    assert said.startswith("Opened pull request #1") and len(forge.pulls()) == 1
    assert (
        pushed is not None and forge.head_of("acme/app", BRANCH) == pushed
    )  # found on the forge, not pushed again
    assert [c.pushes for c in cards(redis)] == [1]


def test_what_the_sandbox_planted_in_the_workspace_never_runs_or_sees_the_token(tmp_path, forge, redis):
    marker = tmp_path / "ran"
    settings = settings_for(tmp_path, forge)
    pulls = port(redis, settings)
    workspace = pulls.workspace
    hook = f"#!/bin/sh\nenv > {marker}\n"
    for name in ("pre-push", "pre-commit", "post-commit", "reference-transaction"):
        (workspace / ".git" / "hooks" / name).write_text(hook)
        (workspace / ".git" / "hooks" / name).chmod(0o755)
    with open(workspace / ".git" / "config", "a") as config:
        config.write(
            f"[core]\n\tfsmonitor = {workspace}/.git/hooks/pre-push\n\thooksPath = .git/hooks\n"
            f'[filter "evil"]\n\tclean = tee {marker}\n'
            f"[credential]\n\thelper = !tee {marker}\n"
            f'[url "http://127.0.0.1:1/"]\n\tinsteadOf = {forge.url}/\n'
        )
    (workspace / ".gitattributes").write_text("*.txt filter=evil\n")
    (workspace / "notes.txt").write_text("plain text\n")
    secret = tmp_path / "outside-secret"
    secret.write_text("root's secret\n")
    os.symlink(secret, workspace / "link-out")

    pulls.publish("t", "b", None)

    assert not marker.exists()  # no hook, fsmonitor, filter or helper of the workspace ran
    assert forge.file_at("acme/app", BRANCH, "notes.txt") == "plain text\n"
    tree = subprocess.run(
        ["git", "-C", str(forge.bare("acme/app")), "ls-tree", BRANCH, "link-out"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert tree.startswith("120000 ")  # the link itself, never the file it points at
    assert forge.file_at("acme/app", BRANCH, "link-out") == str(secret)
    kept = [workspace / ".git" / "config", *shadow_dir(workspace).rglob("config")]
    assert all(FORGE_TOKEN not in path.read_text() for path in kept)
    pushes = [c for c in forge.calls() if "receive-pack" in c.path]
    assert pushes and all(forge.token_of(c.headers) == FORGE_TOKEN for c in pushes)


def app_key(tmp_path: Path, name: str) -> tuple[Path, str]:
    """An RSA private key written as PEM, and its public key's PEM."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path / f"{name}.pem"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return path, public.decode()


def test_a_github_app_mints_a_token_for_each_clone_and_push(tmp_path, forge, redis):
    key_file, public = app_key(tmp_path, "app")
    forge.install_app(App(4242, public, 77, ("acme/app",), ("contents", "pull_requests")))
    settings = settings_for(
        tmp_path, forge, GITHUB_TOKEN=None, GITHUB_APP_ID=4242, GITHUB_APP_PRIVATE_KEY_FILE=key_file
    )
    pulls = port(redis, settings)  # the clone takes the first token
    (pulls.workspace / "README.md").write_text("changed\n")

    said = pulls.publish("From the app", "b", None)

    minted = forge.minted()
    assert said.startswith("Opened pull request #1") and len(minted) == 2
    pushes = [c for c in forge.calls() if c.method == "POST" and c.path.endswith("git-receive-pack")]
    assert [forge.token_of(c.headers) for c in pushes] == [minted[1]]


def test_a_github_app_that_cannot_get_a_token_says_why(tmp_path, forge, redis):
    key_file, public = app_key(tmp_path, "app")
    other_file, _ = app_key(tmp_path, "other")
    forge.install_app(App(4242, public, 77, ("acme/elsewhere",), ("contents", "pull_requests")))
    workspace_settings = settings_for(tmp_path, forge)  # cloned with the plain token
    pulls = port(redis, workspace_settings)
    (pulls.workspace / "README.md").write_text("changed\n")

    for key, why in (
        (key_file, "the GitHub App is not installed on acme/app"),
        (other_file, "refused the GitHub App's signature: check GITHUB_APP_ID"),
    ):
        app = settings_for(
            tmp_path, forge, GITHUB_TOKEN=None, GITHUB_APP_ID=4242, GITHUB_APP_PRIVATE_KEY_FILE=key
        )
        with pytest.raises(ToolError, match=why):
            ForgePullRequests(SessionStore(redis, KEY), app, pulls.workspace, pulls.mirror).preview(None)
    assert forge.minted() == [] and forge.head_of("acme/app", BRANCH) is None


def test_a_conflict_the_base_did_not_cause_is_said_to_the_model_and_on_the_card(tmp_path, forge, redis):
    pulls = port(redis, settings_for(tmp_path, forge))
    (pulls.workspace / "README.md").write_text("changed\n")
    forge.mergeable[BRANCH] = False  # GitHub's answer, whatever its reason

    said = pulls.publish("t", "b", None)

    assert "the branch conflicts with main, though main has not moved under it" in said
    assert BASE_BUNDLE not in said and not (pulls.workspace / BASE_BUNDLE).exists()
    assert [c.conflicts for c in cards(redis)] == [True]


def sandbox_git(workspace: Path, *arguments: str) -> str:
    """git as the model runs it in the sandbox: in the workspace, with the workspace's own config
    (as the workspace's owner, which the test is not: hence safe.directory)."""
    identity = ["-c", "user.name=Agent", "-c", "user.email=agent@example.com", "-c", "safe.directory=*"]
    done = subprocess.run(
        ["git", "-C", str(workspace), *identity, *arguments],
        capture_output=True,
        text=True,
        env={**os.environ, "GIT_EDITOR": "true"},
        check=False,
    )
    return done.stdout + done.stderr


def test_a_base_that_moved_under_the_change_comes_to_the_sandbox_and_the_rebase_is_pushed_as_a_merge(
    tmp_path, forge, redis
):
    pulls = port(redis, settings_for(tmp_path, forge))
    workspace = pulls.workspace
    (workspace / "README.md").write_text("hello from the thread\n")
    moved = forge.commit("acme/app", "main", {"README.md": "hello from main\n", "CHANGELOG.md": "v2\n"})

    said = pulls.publish("Greet", "b", None)

    assert "conflicts with main" in said and f"git fetch {BASE_BUNDLE}" in said and "git rebase" in said
    assert [c.conflicts for c in cards(redis)] == [True]
    first_push = forge.head_of("acme/app", BRANCH)
    (workspace / "NOTES.md").write_text("more\n")
    with pytest.raises(ToolError, match=f"does not build on main's new head {moved[:12]}"):
        pulls.publish("Greet", "b", None)  # the model did not rebase: nothing would merge
    assert forge.head_of("acme/app", BRANCH) == first_push

    sandbox_git(workspace, "add", "-A")
    sandbox_git(workspace, "commit", "-qm", "wip")
    sandbox_git(workspace, "fetch", BASE_BUNDLE, "+main:refs/remotes/origin/main")
    assert "CONFLICT" in sandbox_git(workspace, "rebase", "origin/main")
    (workspace / "README.md").write_text("hello from main and the thread\n")
    sandbox_git(workspace, "add", "README.md")
    sandbox_git(workspace, "rebase", "--continue")

    again = pulls.publish("Greet", "b", None)

    assert again.startswith("Updated pull request #1") and "conflicts" not in again
    head = forge.head_of("acme/app", BRANCH)
    parents = forge.git_in("acme/app", "log", "-1", "--format=%P", str(head)).split()
    assert parents == [first_push, moved]  # the branch moves forward: no force push
    assert forge.file_at("acme/app", BRANCH, "README.md") == "hello from main and the thread\n"
    assert forge.file_at("acme/app", BRANCH, "CHANGELOG.md") == "v2\n"
    files = forge.git_in("acme/app", "ls-tree", "-r", "--name-only", BRANCH).split()
    assert BASE_BUNDLE not in files
    assert [(c.conflicts, c.stat) for c in cards(redis)][-1] == (
        False,
        "2 files changed, 2 insertions(+), 1 deletion(-)",  # against the new main: only the thread's
    )


def gitlab_settings(tmp_path: Path, forge: FakeForge) -> Settings:
    repo = {"url": f"{forge.url}/acme/app.git", "forge": "gitlab", "repo": "acme/app", "base": "main"}
    return settings_for(
        tmp_path,
        forge,
        CHANNEL_REPOS={"C1": repo},
        GITHUB_TOKEN=None,
        GITLAB_TOKEN=FORGE_TOKEN,
        GITLAB_API_URL=forge.gitlab_api_url,
    )


def basic_user(call) -> str:  # type: ignore[no-untyped-def]
    scheme, _, credential = call.headers["authorization"].partition(" ")
    return base64.b64decode(credential).decode().partition(":")[0] if scheme == "Basic" else ""


def test_a_gitlab_project_gets_one_merge_request_that_later_pushes_update(tmp_path, forge, redis):
    pulls = port(redis, gitlab_settings(tmp_path, forge))
    (pulls.workspace / "app.py").write_text("print('fixed')\n")

    preview = pulls.preview(None)
    said = pulls.publish("Fix the bug", "It printed bug.", None)

    assert "; opens a merge request." in preview  # as the person approving reads it: GitLab's words
    assert said.startswith(f"Opened merge request !1: {forge.url}/acme/app/-/merge_requests/1")
    first = forge.head_of("acme/app", BRANCH)
    forge.set_status(str(first), "failure")
    (pulls.workspace / "docs.md").write_text("how it works\n")
    preview = pulls.preview(None)
    again = pulls.publish("Fix the bug, with docs", "Docs too.", None)

    assert "; updates merge request !1." in preview
    assert again.startswith("Updated merge request !1")
    with pytest.raises(ToolError, match="merge request !1 is up to date"):
        pulls.publish("Fix the bug, with docs", "Docs too.", None)
    [pull] = forge.pulls()
    assert (pull.title, pull.head, pull.base) == ("Fix the bug, with docs", BRANCH, "main")
    assert forge.file_at("acme/app", BRANCH, "docs.md") == "how it works\n"
    assert [(c.forge, c.number, c.pushes, c.url.endswith("/-/merge_requests/1")) for c in cards(redis)] == [
        ("gitlab", 1, 1, True),
        ("gitlab", 1, 2, True),
    ]
    api = [c for c in forge.calls() if c.path.startswith("/api/v4/projects/acme%2Fapp/")]
    assert {c.method for c in api} == {"GET", "POST", "PUT"}
    assert all(forge.token_of(c.headers) == FORGE_TOKEN for c in api)
    pushes = [c for c in forge.calls() if c.method == "POST" and c.path.endswith("git-receive-pack")]
    # oauth2: the user name GitLab's OAuth tokens need
    assert len(pushes) == 2 and {basic_user(c) for c in pushes} == {"oauth2"}
    assert all(forge.token_of(c.headers) == FORGE_TOKEN for c in pushes)


def test_a_gitlab_token_without_rights_or_missing_is_refused_in_words(tmp_path, forge, redis):
    settings = gitlab_settings(tmp_path, forge)
    pulls = port(redis, settings)
    (pulls.workspace / "app.py").write_text("print('fixed')\n")
    forge.grant(FORGE_TOKEN, "contents")  # may push, may not use the API

    with pytest.raises(ToolError, match="needs the api scope and at least the Developer role"):
        pulls.publish("t", "b", None)

    untokened = settings.model_copy(update={"GITLAB_TOKEN": None})
    with pytest.raises(ToolError, match="an admin sets GITLAB_TOKEN"):
        ForgePullRequests(SessionStore(redis, KEY), untokened, pulls.workspace, pulls.mirror).preview(None)
    assert not forge.pulls()
