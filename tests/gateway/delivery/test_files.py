"""send_file's delivery (gateway.delivery.files): the workspace file uploaded into the thread once,
over the fake Slack's external upload flow; what the agent swapped in for a link is never read."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.delivery.files import post_file
from gateway.delivery.poster import ThreadPoster
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import BOT_TOKEN
from gateway.slack_client import web_client
from jobs.keys import SessionKey
from jobs.session.notices import FileNotice
from jobs.session.store import SessionStore
from jobs.settings import Settings
from tests.thread_view import bot_messages

LIMIT = 1_000


@pytest.fixture
def poster(redis, fake_slack: FakeSlack) -> ThreadPoster:
    root = fake_slack.add_user_message("C111", "start", user="W222")
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    client = web_client(Settings.load(SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_API_URL=fake_slack.api_url))
    return ThreadPoster(SessionStore(redis, key), client)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    (path / "out").mkdir(parents=True)
    return path


def notice(path: str) -> FileNotice:
    return FileNotice(path=path, name=Path(path).name, title="Title", size=1, call_id="c1")


def said(fake_slack: FakeSlack, poster: ThreadPoster) -> list[str]:
    return [m.get("text", "") for m in bot_messages(fake_slack, "C111", poster.key.thread_ts)]


def test_a_file_is_uploaded_once_per_entry(poster, fake_slack, workspace):
    (workspace / "out" / "report.txt").write_bytes(b"the report")
    for _ in range(2):
        post_file(poster, "1-0", notice("out/report.txt"), workspace, LIMIT)
    files = [f for m in bot_messages(fake_slack, "C111", poster.key.thread_ts) for f in m.get("files") or []]
    assert [(f["name"], f["title"]) for f in files] == [("report.txt", "Title")]
    assert fake_slack.state.uploaded[files[0]["id"]] == b"the report"
    assert len(fake_slack.calls("files.getUploadURLExternal")) == 1


@pytest.mark.parametrize("swap", ["file link", "directory link", "too large", "gone", "climbing"])
def test_what_is_not_a_plain_file_inside_the_workspace_is_said_not_sent(
    poster, fake_slack, workspace, tmp_path, swap
):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "report.txt").write_bytes(b"the worker's own secret")
    path = "out/report.txt"
    if swap == "file link":
        (workspace / "out" / "report.txt").symlink_to(secret / "report.txt")
    elif swap == "directory link":
        (workspace / "out").rmdir()
        (workspace / "out").symlink_to(secret)
    elif swap == "too large":
        (workspace / "out" / "report.txt").write_bytes(b"x" * (LIMIT + 1))
    elif swap == "climbing":
        path = "../secret/report.txt"

    post_file(poster, "1-0", notice(path), workspace, LIMIT)

    assert fake_slack.state.uploaded == {} and fake_slack.calls("files.getUploadURLExternal") == []
    reason = (
        "it is now larger than 1,000 bytes (UPLOAD_MAX_BYTES)"
        if swap == "too large"
        else "it is no longer a regular file inside the workspace"
    )
    assert said(fake_slack, poster) == [f"Could not send the file `report.txt`: {reason}."]
