"""Files shared in a thread, downloaded by the worker (jobs.turn.uploads) from the fake Slack
over HTTP: names, hosts, types and sizes are the sharer's, so each limit is tried here."""

import base64
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from agent.messages import ImageURLPart, user_message
from agent.testing import LocalServer, QuietHandler
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import BOT_TOKEN
from jobs.session.user_input import SharedFile, UserInput
from jobs.settings import SLACK_DEFAULT_API_URL, Settings
from jobs.turn.uploads import (
    IMAGE_PART_MAX_BYTES,
    FileFetcher,
    Refusal,
    Refused,
    Saved,
    attachments_message,
    check_url,
    refusal_text,
    safe_name,
    shared_files_of,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def fetcher(fake: FakeSlack, workspace: Path, **settings: object) -> FileFetcher:
    values = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_API_URL": fake.api_url, **settings}
    return FileFetcher(Settings.load(**values), workspace)


def shared(fake: FakeSlack, name: str, content: bytes, mimetype: str = "text/plain") -> SharedFile:
    item = fake.share_file(name, content, mimetype)
    return SharedFile(
        id=item["id"], name=name, mimetype=mimetype, size=item["size"], url=item["url_private_download"]
    )


def test_a_shared_file_is_saved_under_uploads_with_a_plain_name_that_never_overwrites(fake_slack, workspace):
    take = fetcher(fake_slack, workspace)
    first = take.fetch(shared(fake_slack, "notes.txt", b"one"))
    second = take.fetch(shared(fake_slack, "notes.txt", b"two"))
    climbing = take.fetch(shared(fake_slack, "../../../etc/passwd", b"three"))
    dotfile = take.fetch(shared(fake_slack, ".bashrc", b"four"))

    assert isinstance(first, Saved) and isinstance(second, Saved)
    assert (first.path, second.path) == (".threadline/uploads/notes.txt", ".threadline/uploads/notes-1.txt")
    assert [(workspace / s.path).read_bytes() for s in (first, second)] == [b"one", b"two"]
    assert isinstance(climbing, Saved) and climbing.path == ".threadline/uploads/passwd"
    assert isinstance(dotfile, Saved) and dotfile.path == ".threadline/uploads/bashrc"
    assert all(authorized for _, authorized in fake_slack.state.downloads)


def test_names_lose_directories_dots_controls_and_markup():
    assert safe_name("a/b\\c/..") == "file"
    assert safe_name("<!channel> `rm` $HOME.txt") == "!channel rm HOME.txt"
    assert safe_name("x\x00y\nz.log") == "xyz.log"
    long = safe_name("n" * 400 + ".txt")
    assert len(long.encode()) <= 120 and long.endswith(".txt")


@pytest.fixture
def elsewhere() -> Iterator[FakeSlack]:
    """Another server that would gladly take the bot token: a different origin from Slack's."""
    other = FakeSlack(bot_token=BOT_TOKEN).start()
    yield other
    other.stop()


def test_the_bot_token_goes_to_no_host_but_slacks(fake_slack, elsewhere, workspace):
    take = fetcher(fake_slack, workspace)
    foreign = shared(elsewhere, "secret.txt", b"x")
    port = fake_slack.url.rsplit(":", 1)[1]
    with_userinfo = foreign.model_copy(update={"url": f"http://evil@127.0.0.1:{port}/files-pri/T111-F1/x"})
    https_lookalike = foreign.model_copy(update={"url": "https://files.slack.com.evil.example/files-pri/x"})
    no_url = foreign.model_copy(update={"url": ""})

    outcomes = [take.fetch(item) for item in (foreign, with_userinfo, https_lookalike, no_url)]

    assert all(isinstance(outcome, Refused) for outcome in outcomes)
    assert "not on Slack" in outcomes[0].reason  # type: ignore[union-attr]
    assert elsewhere.state.downloads == [] and fake_slack.state.downloads == []
    assert not (workspace / ".threadline").exists()


def test_on_the_real_slack_only_slack_and_its_files_host_are_trusted():
    check_url("https://files.slack.com/files-pri/T1-F1/download/a.txt", SLACK_DEFAULT_API_URL)
    check_url("https://slack.com/files-pri/T1-F1/a.txt", SLACK_DEFAULT_API_URL)
    for url in (
        "http://files.slack.com/files-pri/T1-F1/a.txt",  # the token in clear text
        "https://files.slack.com:8443/files-pri/T1-F1/a.txt",
        "https://files.slack.com@evil.example/a.txt",
        "https://evil.example/files.slack.com/a.txt",
        "https://files.slack.com.evil.example/a.txt",
    ):
        with pytest.raises(Refusal):
            check_url(url, SLACK_DEFAULT_API_URL)
    with pytest.raises(Refusal):  # a fake Slack's settings never trust the real files host
        check_url("https://files.slack.com/files-pri/T1-F1/a.txt", "http://127.0.0.1:9/api/")


def _redirecting_to(target: str) -> type[BaseHTTPRequestHandler]:
    class Redirect(QuietHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Redirect


def test_a_redirect_is_a_refusal_and_is_never_followed(elsewhere, workspace):
    target = shared(elsewhere, "secret.txt", b"x")
    server = LocalServer(_redirecting_to(target.url), "redirect")
    server.start()
    try:
        host, port = server.address
        take = FileFetcher(
            Settings.load(SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_API_URL=f"http://{host}:{port}/api/"), workspace
        )
        outcome = take.fetch(target.model_copy(update={"url": f"http://{host}:{port}/files-pri/T111-F1/x"}))
    finally:
        server.stop()
    assert isinstance(outcome, Refused) and "redirect" in outcome.reason
    assert elsewhere.state.downloads == []
    assert list((workspace / ".threadline" / "uploads").iterdir()) == []


def test_a_file_without_the_bot_token_is_refused_with_the_scope_named(fake_slack, workspace):
    take = fetcher(fake_slack, workspace, SLACK_BOT_TOKEN="xoxb-wrong")
    outcome = take.fetch(shared(fake_slack, "a.txt", b"x"))
    assert isinstance(outcome, Refused) and "files:read" in outcome.reason


def test_the_size_is_counted_while_streaming_whatever_slack_declared(fake_slack, workspace):
    take = fetcher(fake_slack, workspace, UPLOAD_MAX_BYTES=1_000)
    liar = shared(fake_slack, "big.log", b"x" * 5_000).model_copy(update={"size": 10})
    declared = shared(fake_slack, "huge.log", b"x").model_copy(update={"size": 10**9})

    lied, honest = take.fetch(liar), take.fetch(declared)

    assert isinstance(lied, Refused) and "1,000" in lied.reason
    assert isinstance(honest, Refused) and "1,000,000,000 bytes" in honest.reason
    assert list((workspace / ".threadline" / "uploads").iterdir()) == []  # the partial file is gone
    # Declared too big: never fetched.
    assert [file_id for file_id, _ in fake_slack.state.downloads] == [liar.id]


def test_types_follow_upload_types(fake_slack, workspace):
    strict = fetcher(fake_slack, workspace)
    program = shared(fake_slack, "setup.exe", b"MZ", "application/x-msdownload")
    refused = strict.fetch(program)
    assert isinstance(refused, Refused) and "application/x-msdownload" in refused.reason
    assert refusal_text([refused]) == (
        "Not taken: `setup.exe`: files of type application/x-msdownload are not taken here (UPLOAD_TYPES)."
    )
    assert isinstance(fetcher(fake_slack, workspace, UPLOAD_TYPES="*").fetch(program), Saved)
    markdown = shared(fake_slack, "a.md", b"#")
    assert isinstance(fetcher(fake_slack, workspace, UPLOAD_TYPES="text/*").fetch(markdown), Saved)


def test_a_linked_uploads_directory_is_not_followed(fake_slack, workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / ".threadline").symlink_to(outside)
    (outside / "uploads").mkdir()
    outcome = fetcher(fake_slack, workspace).fetch(shared(fake_slack, "a.txt", b"x"))
    assert isinstance(outcome, Refused) and "not a plain directory" in outcome.reason
    assert list((outside / "uploads").iterdir()) == []


def test_an_image_becomes_an_image_part_only_with_vision_and_real_image_bytes(fake_slack, workspace):
    png = shared(fake_slack, "shot.png", PNG, "image/png")
    fake_png = shared(fake_slack, "fake.png", b"<svg onload=x>", "image/png")
    huge_png = shared(fake_slack, "huge.png", PNG + b"\x00" * IMAGE_PART_MAX_BYTES, "image/png")

    seen = fetcher(fake_slack, workspace, LLM_VISION=True).fetch(png)
    not_an_image = fetcher(fake_slack, workspace, LLM_VISION=True).fetch(fake_png)
    blind = fetcher(fake_slack, workspace).fetch(png)
    too_big = fetcher(fake_slack, workspace, LLM_VISION=True).fetch(huge_png)

    assert isinstance(seen, Saved) and isinstance(seen.image, ImageURLPart)
    assert seen.image.image_url.url == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert isinstance(not_an_image, Saved) and not_an_image.image is None
    assert isinstance(blind, Saved) and blind.image is None
    # Saved for the tools, but not carried on the wire and in every request after it.
    assert isinstance(too_big, Saved) and too_big.image is None and too_big.size > IMAGE_PART_MAX_BYTES


def test_the_model_reads_where_each_file_went_and_sees_the_images(fake_slack, workspace):
    files = [
        shared(fake_slack, "shot.png", PNG, "image/png"),
        shared(fake_slack, "x.exe", b"MZ", "application/x-msdownload"),
    ]
    said = UserInput(text="look", user="W222", ts="1.000001", files=files)
    message = said.to_message()
    assert [f.name for f in shared_files_of(message)] == ["shot.png", "x.exe"]
    assert shared_files_of(user_message("no files")) == []

    outcomes = fetcher(fake_slack, workspace, LLM_VISION=True).fetch_all(shared_files_of(message))
    note = attachments_message(message, outcomes, vision=True)

    assert note.origin is not None and note.origin.kind == "attachments"
    assert note.text().splitlines() == [
        "Files shared with <@W222>'s message:",
        "- shot.png: saved as `.threadline/uploads/shot.png` (image/png, 72 bytes); the image follows.",
        "- x.exe: not taken, files of type application/x-msdownload are not taken here (UPLOAD_TYPES).",
    ]
    assert [part.type for part in note.content] == ["text", "image_url"]


def test_the_token_goes_only_to_slacks_file_paths_not_its_api():
    """url_private is a file under /files-pri/ on Slack's files host (or a fake's own host);
    the Web API on the same host takes the bot token too, so an address there is refused."""
    check_url("https://files.slack.com/files-pri/T0123ABC-F0456DEF/report.pdf", SLACK_DEFAULT_API_URL)
    check_url("https://files.slack.com/files-pri/T0123ABC-F0456DEF/download/a%20b.txt", SLACK_DEFAULT_API_URL)
    check_url("http://127.0.0.1:9/files-pri/T111-F1/download/a.txt", "http://127.0.0.1:9/api/")
    for url in (
        "https://slack.com/api/files.info?file=F0456DEF",
        "https://slack.com/api/chat.postMessage",
        "https://files.slack.com/api/files.info",
        "https://slack.com/",
        "https://files.slack.com/files-tmb/T1-F1-abc/a_360.png",  # a thumbnail is not the file
        "https://files.slack.com/files-pri/T1-F1/../../api/auth.test",
        "https://files.slack.com/files-pri/T1-F1/%2e%2e/%2E%2E/api/auth.test",
        "https://slack.com/files-pri/T1-F1/%2E%2e",
        "https://files.slack.com/files-pri/T1-F1/a.txt?token=x",
        "https://files.slack.com/files-pri/T1-F1",
        "http://127.0.0.1:9/api/files.info",
    ):
        api = "http://127.0.0.1:9/api/" if url.startswith("http://") else SLACK_DEFAULT_API_URL
        with pytest.raises(Refusal):
            check_url(url, api)


def test_the_fakes_own_shared_file_address_is_one_slack_would_give(fake_slack, workspace):
    """The fake serves url_private as Slack does (`/files-pri/T…-F…/name`): the check takes it."""
    saved = fetcher(fake_slack, workspace).fetch(shared(fake_slack, "report final.txt", b"ok"))
    assert isinstance(saved, Saved) and (workspace / saved.path).read_bytes() == b"ok"
    item = fake_slack.share_file("b.txt", b"x")
    check_url(item["url_private"], fake_slack.api_url)
