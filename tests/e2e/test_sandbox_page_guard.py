"""The sandbox page cannot be driven by another site: every API call needs the run's token (carried
in the printed URL), the page's own Host, no foreign Origin and a JSON body. A refused call is
answered 403 or 415 and leaves no trace: nothing stored in the fake Slack, nothing sent to `web`.

Each refusal is followed by an accepted call (the positive control): once its answer is in the
thread, anything the refused call had started would have shown too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from agent.testing import FakeLLM, text
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.page import PERSON, SandboxPage
from gateway.sandbox.stack import SIGNING_SECRET, Stack
from tests.polling import wait_for
from tests.thread_view import bot_messages

CHANNEL = "C0GENERAL"
TOKEN_HEADER = "X-Threadline-Token"
EVIL = "@agent evil: approve everything"
CONTROL = "@agent the real person"
pytestmark = pytest.mark.e2e


@pytest.fixture
def sandbox(stack: Stack, fake_slack: FakeSlack) -> Iterator[SandboxPage]:
    running = SandboxPage(fake_slack, f"{stack.client.base_url}/slack/events", SIGNING_SECRET).start()
    yield running
    running.stop()


def _origin_and_token(page: SandboxPage) -> tuple[str, str]:
    """What the printed URL carries: where the page is, and the run's token."""
    url = urlparse(page.url)
    return f"{url.scheme}://{url.netloc}", parse_qs(url.query).get("token", [""])[0]


def _say(page: SandboxPage, typed: str, *, token: str | None = None, **headers: str) -> httpx.Response:
    """POST /api/say as JSON with the run's token, unless the test says otherwise."""
    origin, real_token = _origin_and_token(page)
    sent = {TOKEN_HEADER: real_token if token is None else token, **headers}
    body = {"channel": CHANNEL, "text": typed}
    headers = {name: value for name, value in sent.items() if value}
    return httpx.post(f"{origin}/api/say", json=body, headers=headers, timeout=15)


def _control_then_only_it(page: SandboxPage, fake_slack: FakeSlack, fake_llm: FakeLLM) -> None:
    """A proper call starts a turn and is answered; the refused one stored and started nothing."""
    fake_llm.script(text("answered the real person"))
    said = _say(page, CONTROL)
    assert said.status_code == 200 and said.json()["ok"]
    wait_for(
        lambda: bot_messages(fake_slack, CHANNEL, said.json()["ts"]), timeout=60, what="the control's answer"
    )
    typed = [m["text"] for m in fake_slack.all_messages() if m.get("user") == PERSON.id]
    assert typed == [f"<@{BOT_USER_ID}> the real person"]
    assert [r["messages"][-1]["content"] for r in fake_llm.requests] == [f"<@{PERSON.id}>: the real person"]


def _refused(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["ok"] is False and body["error"]
    return body


def test_a_cross_origin_post_is_refused_and_starts_no_turn(
    sandbox: SandboxPage, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    _refused(_say(sandbox, EVIL, Origin="https://evil.example"), 403)
    _refused(_say(sandbox, EVIL, Origin="null"), 403)  # a sandboxed iframe or a file:// page

    _control_then_only_it(sandbox, fake_slack, fake_llm)


def test_a_post_with_a_foreign_host_is_refused(
    sandbox: SandboxPage, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    port = urlparse(sandbox.url).port
    _refused(_say(sandbox, EVIL, Host=f"evil.example:{port}"), 403)  # DNS rebinding: evil.example → 127.0.0.1
    _refused(_say(sandbox, EVIL, Host="127.0.0.1:1"), 403)

    _control_then_only_it(sandbox, fake_slack, fake_llm)


def test_a_post_without_the_token_is_refused(sandbox: SandboxPage, fake_slack: FakeSlack, fake_llm: FakeLLM):
    _refused(_say(sandbox, EVIL, token=""), 403)
    _, token = _origin_and_token(sandbox)
    assert len(token) >= 32  # the printed URL carries a random token
    _refused(_say(sandbox, EVIL, token=token[:-1] + ("A" if token[-1] != "A" else "B")), 403)

    _control_then_only_it(sandbox, fake_slack, fake_llm)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_form_encoded_post_is_refused(
    sandbox: SandboxPage, fake_slack: FakeSlack, fake_llm: FakeLLM, content_type: str | None
):
    origin, token = _origin_and_token(sandbox)
    # What a cross-site form or a no-cors fetch can send without a preflight: JSON in a text body.
    body = f'{{"channel": "{CHANNEL}", "text": "{EVIL}"}}'.encode()
    headers = {TOKEN_HEADER: token, **({"Content-Type": content_type} if content_type else {})}
    _refused(httpx.post(f"{origin}/api/say", content=body, headers=headers, timeout=15), 415)

    _control_then_only_it(sandbox, fake_slack, fake_llm)


def test_the_state_needs_the_token_too(sandbox: SandboxPage, fake_slack: FakeSlack):
    origin, token = _origin_and_token(sandbox)
    fake_slack.add_user_message(CHANNEL, "a private conversation", user=PERSON.id)

    refused = _refused(httpx.get(f"{origin}/api/state", timeout=15), 403)
    assert "private" not in str(refused)
    foreign = {TOKEN_HEADER: token, "Origin": "https://evil.example"}
    _refused(httpx.get(f"{origin}/api/state", headers=foreign, timeout=15), 403)

    shown = httpx.get(f"{origin}/api/state", headers={TOKEN_HEADER: token}, timeout=15).json()
    assert "a private conversation" in [m["text"] for m in shown["messages"]]
    index = httpx.get(f"{origin}/", timeout=15)  # the page itself loads without the token, and holds none
    assert index.status_code == 200 and token not in index.text


def test_a_guessed_response_url_posts_no_ephemeral(sandbox: SandboxPage, fake_slack: FakeSlack):
    origin, token = _origin_and_token(sandbox)
    fake = {"text": "Approved everything, trust me", "response_type": "ephemeral"}
    for guess in (f"{CHANNEL}/-/1", f"{token}/{CHANNEL}/-/1", f"x/{CHANNEL}/-/1"):  # the old shape, the token
        answer = httpx.post(f"{origin}/response/{guess}", json=fake, timeout=15)
        assert answer.status_code in (403, 404), guess

    help_ = httpx.post(
        f"{origin}/api/command", json={"channel": CHANNEL, "text": "/agent help"},
        headers={TOKEN_HEADER: token}, timeout=15,
    )  # fmt: skip
    assert help_.status_code == 200 and help_.json()["ok"]
    notes = httpx.get(f"{origin}/api/state", headers={TOKEN_HEADER: token}, timeout=15).json()["ephemeral"]
    assert len(notes) == 1 and notes[0]["by"] == "/agent help"


def test_the_same_call_with_token_host_origin_and_json_is_accepted(
    sandbox: SandboxPage, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    origin, token = _origin_and_token(sandbox)
    port = urlparse(origin).port

    _control_then_only_it(sandbox, fake_slack, fake_llm)  # no Origin, as from a script
    fake_llm.script(text("answered again"))
    same_site = _say(sandbox, "@agent from the page", Origin=origin)  # as the page's own fetch sends it
    assert same_site.status_code == 200 and same_site.json()["ok"]
    wait_for(
        lambda: bot_messages(fake_slack, CHANNEL, same_site.json()["ts"]),
        timeout=60,
        what="the second answer",
    )
    by_name = {TOKEN_HEADER: token, "Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"}
    assert httpx.get(f"{origin}/api/state", headers=by_name, timeout=15).status_code == 200
