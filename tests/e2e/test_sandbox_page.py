"""The sandbox page's JSON API against the real web and worker: what a person does there is signed,
forwarded like Slack would send it, and answered in the fake Slack's state the page shows."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent.testing import FakeLLM, calls, text
from gateway.listeners.actions import THANKS
from gateway.render.feedback import FEEDBACK
from gateway.sandbox.events import TEAM_ID
from gateway.sandbox.fake_forge import FakeForge
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.page import PERSON, SandboxPage, slack_text
from gateway.sandbox.page_guard import TOKEN_HEADER
from gateway.sandbox.run import SANDBOX_REPO, SandboxForge, git_checkout, sandbox_config
from gateway.sandbox.stack import SIGNING_SECRET, Stack
from jobs.keys import SessionKey
from tests.polling import wait_for
from tests.sandboxing import workspace_of
from tests.thread_view import bot_messages, buttons, shown

CHANNEL = "C0GENERAL"
pytestmark = pytest.mark.e2e


@pytest.fixture
def page(stack: Stack, fake_slack: FakeSlack) -> Iterator[httpx.Client]:
    running = SandboxPage(fake_slack, f"{stack.client.base_url}/slack/events", SIGNING_SECRET).start()
    with _client(running) as client:
        yield client
    running.stop()


def _client(page: SandboxPage) -> httpx.Client:
    """What the page's own script sends: the token from the URL it was opened by, with every call."""
    return httpx.Client(base_url=page.origin, headers={TOKEN_HEADER: page.token}, timeout=15)


def test_a_mention_typed_in_the_page_is_answered_in_its_thread(
    page: httpx.Client, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    fake_llm.script(text("Hello from the model."))

    said = page.post("/api/say", json={"channel": CHANNEL, "text": "@agent say hello"}).json()

    assert said["ok"] and said["statuses"] == [200, 200]  # app_mention and message, like Slack
    root = fake_slack.thread(CHANNEL, said["ts"])[0]
    assert root["text"] == f"<@{BOT_USER_ID}> say hello" and root["user"] == PERSON.id
    replies = wait_for(lambda: bot_messages(fake_slack, CHANNEL, said["ts"]), what="the answer")
    assert [m["text"] for m in replies] == ["Hello from the model."]
    assert fake_llm.accepted()[0]["messages"][-1]["content"] == f"<@{PERSON.id}>: say hello"
    state = page.get("/api/state").json()
    assert "Hello from the model." in [m.get("text") for m in state["messages"]]
    assert state["last_forward"] == {"status": 200, "problem": ""}


def test_a_thread_reply_steers_the_session_and_a_click_approves(
    make_stack, fake_slack: FakeSlack, fake_llm: FakeLLM, tmp_path
):
    stack = make_stack(APPROVAL_WAIVED_TOOLS="", SLACK_APPROVERS=PERSON.id, workers=2, SLACK_STREAMING="on")
    sandbox = SandboxPage(fake_slack, f"{stack.client.base_url}/slack/events", SIGNING_SECRET).start()
    fake_llm.script(calls(("c1", "shell", {"command": "touch ran"})), text("done it"), text("noted"))
    try:
        with _client(sandbox) as page:
            root = page.post("/api/say", json={"channel": CHANNEL, "text": "@agent touch it"}).json()["ts"]
            approve_on_the_page(page, fake_slack, root)
            wait_for(lambda: "done it" in _texts(fake_slack, root), what="the answer after approval")
            key = SessionKey(team=TEAM_ID, channel=CHANNEL, thread_ts=root)
            assert (workspace_of(tmp_path, key) / "ran").exists()
            notes = page.get("/api/state").json()["ephemeral"]
            assert [n["text"] for n in notes] == ["Approved `shell`."] and notes[0]["thread_ts"] == root

            reply = {"channel": CHANNEL, "text": "thanks", "thread_ts": root}
            assert page.post("/api/say", json=reply).json()["statuses"] == [200]  # a message event only
            wait_for(lambda: "noted" in _texts(fake_slack, root), what="the answer to the reply")
            assert fake_llm.accepted()[-1]["messages"][-1]["content"] == f"<@{PERSON.id}>: thanks"

            # the streamed answer's 👍, clicked on the page
            answer = wait_for(lambda: next((m for m in bot_messages(fake_slack, CHANNEL, root)
                                            if "noted" in shown(m) and m.get("blocks")), None),
                              what="the answer's feedback buttons")  # fmt: skip
            up = answer["blocks"][-1]["elements"][0]["positive_button"]["value"]
            click = {"channel": CHANNEL, "message_ts": answer["ts"], "action_id": FEEDBACK, "value": up}
            assert page.post("/api/click", json=click).json() == {"ok": True, "statuses": [200]}
            assert page.get("/api/state").json()["ephemeral"][-1]["text"] == THANKS
    finally:
        sandbox.stop()


def test_a_slash_command_is_answered_ephemerally_where_it_was_typed(page: httpx.Client):
    answer = page.post("/api/command", json={"channel": CHANNEL, "text": "/agent help"}).json()

    assert answer == {"ok": True, "statuses": [200]}
    notes = page.get("/api/state").json()["ephemeral"]
    assert len(notes) == 1 and notes[0]["channel"] == CHANNEL and "thread_ts" not in notes[0]
    assert "/agent cancel [link]" in notes[0]["text"] and notes[0]["by"] == "/agent help"


def test_requests_signed_with_another_secret_are_refused_and_the_page_says_so(
    stack: Stack, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    sandbox = SandboxPage(fake_slack, f"{stack.client.base_url}/slack/events", "not-the-secret").start()
    try:
        with _client(sandbox) as page:
            said = page.post("/api/say", json={"channel": CHANNEL, "text": "@agent hi"}).json()
            assert said["ok"] is False and said["statuses"] == [401, 401]
            assert page.get("/api/state").json()["last_forward"]["status"] == 401
    finally:
        sandbox.stop()
    assert fake_llm.requests == []


def test_the_page_and_its_static_files_are_served(page: httpx.Client):
    index = page.get("/")
    assert index.status_code == 200 and 'src="/static/app.js"' in index.text
    assert "function render()" in page.get("/static/app.js").text
    assert page.get("/static/app.css").headers["content-type"].startswith("text/css")
    assert page.get("/static/../page.py").status_code == 404


def test_bad_requests_get_a_400_with_the_reason(page: httpx.Client):
    unknown = page.post("/api/say", json={"channel": "C0NOPE", "text": "hi"})
    assert unknown.status_code == 400 and "unknown channel" in unknown.json()["error"]
    other = page.post("/api/command", json={"channel": CHANNEL, "text": "/other thing"})
    assert other.status_code == 400 and "/agent" in other.json()["error"]
    missing = page.post("/api/click", json={"channel": CHANNEL, "message_ts": "1.2", "action_id": "tl_stop"})
    assert missing.status_code == 400


def test_typed_mentions_become_slack_mentions():
    assert slack_text(" @agent list the files ") == f"<@{BOT_USER_ID}> list the files"
    assert slack_text("mail me@agent.dev") == "mail me@agent.dev"


def test_sandbox_settings_fill_in_slack_and_keep_what_was_given():
    filled = sandbox_config({"PORT": "4123"}, "http://127.0.0.1:9/api/", "redis://127.0.0.1:9/0")
    assert filled.env["SLACK_API_URL"] == "http://127.0.0.1:9/api/"
    assert filled.env["SLACK_BOT_TOKEN"].startswith("xoxb-") and len(filled.signing_secret) == 32
    assert filled.env["SLACK_SIGNING_SECRET"] == filled.signing_secret and filled.web_port == 4123
    assert filled.notes == ()
    assert filled.env["SLACK_APPROVERS"] == PERSON.id  # the page's one person approves

    given = {"SLACK_SIGNING_SECRET": "s3", "SLACK_API_URL": "https://example.test/api/", "PORT": "1"}
    kept = sandbox_config(given, "http://127.0.0.1:9/api/", "redis://127.0.0.1:9/0")
    assert kept.signing_secret == "s3" and kept.env["SLACK_API_URL"] == "http://127.0.0.1:9/api/"
    assert "replaced by the sandbox's fake Slack" in kept.notes[0]


def test_the_first_channel_works_on_a_clone_of_the_checkout_unless_repos_are_set(tmp_path):
    cloned = sandbox_config({}, "http://127.0.0.1:9/api/", "redis://127.0.0.1:9/0", tmp_path)
    assert json.loads(cloned.env["CHANNEL_REPOS"]) == {CHANNEL: str(tmp_path)}
    assert git_checkout(Path(__file__).parent) == Path(__file__).resolve().parents[2]
    given = {"CHANNEL_REPOS": '{"C1": "/srv/repo"}'}
    assert (
        sandbox_config(given, "http://h/api/", "redis://h/0", tmp_path).env["CHANNEL_REPOS"]
        == given["CHANNEL_REPOS"]
    )


def test_the_sandbox_opens_pull_requests_on_a_local_fake_forge_and_the_page_shows_the_card(
    make_stack, fake_slack: FakeSlack, fake_llm: FakeLLM, tmp_path
):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "README.md").write_text("the team's code\n")
    author = ["-c", "user.name=t", "-c", "user.email=t@t"]
    for step in (["init", "-q"], ["add", "."], [*author, "commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(checkout), *step], check=True)
    forge = FakeForge(tmp_path).start()
    token = "ghs_sandboxtoken0123456789"
    url = forge.add_repo_from(SANDBOX_REPO, checkout)
    forge.grant(token, "contents", "pull_requests")
    served = SandboxForge(url=url, api_url=forge.api_url, web_url=forge.url, token=token)
    config = sandbox_config({}, fake_slack.api_url, "redis://unused/0", checkout, served)
    settings = {name: config.env[name] for name in ("CHANNEL_REPOS", "GITHUB_TOKEN", "GITHUB_API_URL")}
    stack = make_stack(APPROVAL_WAIVED_TOOLS="", SLACK_APPROVERS=PERSON.id, **settings)
    sandbox = SandboxPage(fake_slack, f"{stack.client.base_url}/slack/events", SIGNING_SECRET).start()
    fake_llm.script(
        calls(("c1", "write_file", {"path": "NOTES.md", "content": "notes\n"})),
        calls(("c2", "open_pull_request", {"title": "Add notes"})),
        text("Opened."),
    )
    try:
        with _client(sandbox) as page:
            root = page.post("/api/say", json={"channel": CHANNEL, "text": "@agent add notes, open a PR"})
            ts = root.json()["ts"]
            approve_on_the_page(page, fake_slack, ts)
            wait_for(lambda: "Opened." in _texts(fake_slack, ts), what="the answer")
            shown_on_page = [m for m in page.get("/api/state").json()["messages"] if "Pull request" in str(m)]
            page_text = httpx.get(f"{forge.url}/{SANDBOX_REPO}/pull/1").text
    finally:
        sandbox.stop()
        forge.stop()
    link = f"{forge.url}/{SANDBOX_REPO}/pull/1"
    assert len(shown_on_page) == 1 and link in str(shown_on_page[0])
    assert "NOTES.md | 1 +" in page_text and page_text.startswith("#1 Add notes\n")
    assert (
        forge.file_at(SANDBOX_REPO, f"threadline/{CHANNEL.lower()}-{ts.replace('.', '')}", "NOTES.md")
        == "notes\n"
    )


def approve_on_the_page(page: httpx.Client, fake_slack: FakeSlack, thread_ts: str) -> None:
    """Wait for the thread's approval card and click its Approve on the page."""
    card = wait_for(
        lambda: next(
            (m for m in bot_messages(fake_slack, CHANNEL, thread_ts) if "Approve" in buttons(m)), None
        ),
        what="the approval card",
    )
    click = {"channel": CHANNEL, "message_ts": card["ts"], "action_id": "tl_approve"}
    assert page.post("/api/click", json=click).json() == {"ok": True, "statuses": [200]}


def _texts(fake_slack: FakeSlack, thread_ts: str) -> list[str]:
    return [shown(m) for m in bot_messages(fake_slack, CHANNEL, thread_ts)]
