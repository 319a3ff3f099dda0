"""`threadline sandbox` in a real headless Chromium: a person mentions the bot, sees the demo
model's answer arrive in the thread, approves a long shell turn, stops it and sees it stop; and a
page of another local site cannot make the sandbox page start a turn.

Needs Debian's Chromium (/usr/bin/chromium, or THREADLINE_CHROMIUM) and the `playwright` package
(`pip install -e ".[browser]"`); Playwright's own browser download is never used. Without either,
the test is skipped and says why.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from agent.testing import LocalServer, QuietHandler
from gateway.sandbox.ports import free_port
from gateway.sandbox.stack import SOURCE_ROOT, THREADLINE
from tests.polling import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

CHROMIUM = Path(os.environ.get("THREADLINE_CHROMIUM", "/usr/bin/chromium"))
UI_TIMEOUT_MS = 30_000  # a turn goes web → Redis → worker → fake Slack → the page's next poll


def _skip(request: pytest.FixtureRequest, reason: str) -> None:
    """Skip, and say so on the terminal even under `-q` (a skipped browser test must not pass unseen)."""
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\nSKIPPED browser test: {reason}", yellow=True)
    pytest.skip(reason)


@pytest.fixture
def browser_page(request: pytest.FixtureRequest) -> Iterator[Any]:
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        _skip(request, 'the playwright package is missing (pip install -e ".[browser]")')
    if not CHROMIUM.exists():
        _skip(request, f"no Chromium at {CHROMIUM} (apt-get install chromium; no browser is downloaded)")
    expect.set_options(timeout=UI_TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(UI_TIMEOUT_MS)
        yield page
        browser.close()


@pytest.fixture
def sandbox(tmp_path: Path, redis, redis_url: str) -> Iterator[str]:
    """`threadline sandbox` as a person runs it (Redis given, no Slack or model settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "LLM_", "CHANNEL_REPOS"))}
    env.update(
        REDIS_URL=redis_url,
        PORT=str(free_port()),
        AGENT_WORKDIR=str(tmp_path / "workspaces"),
        WEB_CONCURRENCY="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(SOURCE_ROOT), os.environ.get("PYTHONPATH")])),
    )
    log = tmp_path / "sandbox.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [THREADLINE, "sandbox", "--port", str(free_port())],
            cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        ready = wait_for(
            lambda: process.poll() is None and re.search(r"ready at (\S+)", log.read_text()),
            timeout=60,
            what=f"the sandbox to be ready (log: {log})",
        )
        yield ready.group(1)
    finally:
        process.terminate()  # the sandbox stops web, workers and its fakes itself
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait(timeout=10)


def test_mention_answer_approve_and_stop_in_the_browser(browser_page: Any, sandbox: str) -> None:
    from playwright.sync_api import expect

    page = browser_page
    page.goto(sandbox)
    expect(page.locator("#channel-title")).to_have_text("#general")

    page.fill("#channel-input", "@agent list the files")
    page.press("#channel-input", "Enter")
    thread = page.locator("#thread-messages")
    expect(thread).to_contain_text("@agent list the files")  # the thread opened on the mention
    expect(thread).to_contain_text("here is what the tool returned")
    expect(thread).to_contain_text(". is empty.")
    # Streamed (the sandbox runs the product's defaults): the step's call as a task, then the answer.
    expect(thread.locator(".task-complete").first).to_contain_text("list_dir")
    expect(thread.locator(".streaming")).to_have_count(0)

    page.click("#thread-close")
    page.fill("#channel-input", "@agent count to 90 slowly")
    page.press("#channel-input", "Enter")
    thread.get_by_role("button", name="Approve").click()
    expect(thread).to_contain_text("Approved by @you")
    expect(thread.locator(".ephemeral", has_text="Approved shell.")).to_be_visible()
    expect(page.locator("#thread-status")).to_contain_text("agent is")  # the assistant status, live
    page.fill("#thread-input", "!stop")  # no card while steps stream: the thread's own control
    page.press("#thread-input", "Enter")
    expect(thread).to_contain_text("Stopped by @you")
    expect(thread.get_by_role("button", name="Resume")).to_be_visible()
    expect(page.locator("#thread-status")).to_have_text("")

    page.fill("#channel-input", "/agent status")
    page.press("#channel-input", "Enter")
    expect(page.locator("#channel-messages .ephemeral")).to_contain_text("State: stopped")


# Another site a developer visits while the sandbox runs: no token, so it sends what a page may send
# anywhere without asking: a no-cors fetch with a JSON-looking text body, and a text/plain form.
EVIL_PAGE = """<!doctype html><title>loading</title>
<form id="form" method="POST" action="{api}" enctype="text/plain">
<input name='{{"channel": "C0GENERAL", "text": "@agent evil form", "x": "' value='"}}'></form>
<script>
const said = JSON.stringify({{channel: "C0GENERAL", text: "@agent evil fetch"}});
fetch("{api}", {{method: "POST", mode: "no-cors", body: said}})
  .finally(() => {{ document.title = "fetched"; }});
</script>"""


@pytest.fixture
def evil_site(sandbox: str) -> Iterator[str]:
    page = EVIL_PAGE.format(api=f"{_origin(sandbox)}/api/say").encode()

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

    server = LocalServer(Handler, "evil-site")
    server.start()
    host, port = server.address
    yield f"http://{host}:{port}/"
    server.stop()


def _origin(url: str) -> str:
    parts = urlparse(url)
    return f"{parts.scheme}://{parts.netloc}"


def test_a_page_of_another_site_cannot_start_a_turn(browser_page: Any, sandbox: str, evil_site: str) -> None:
    from playwright.sync_api import expect

    page = browser_page
    page.goto(evil_site)
    expect(page).to_have_title("fetched")  # the no-cors fetch went out and came back opaque
    with page.expect_navigation():
        page.evaluate("document.getElementById('form').submit()")
    assert page.url.startswith(f"{_origin(sandbox)}/api/say")
    assert "evil" not in page.content() and '"ok": false' in page.content()

    page.goto(sandbox)  # the positive control: the person, on the page the sandbox printed
    page.fill("#channel-input", "@agent list the files")
    page.press("#channel-input", "Enter")
    expect(page.locator("#thread-messages")).to_contain_text("here is what the tool returned")
    token = parse_qs(urlparse(sandbox).query)["token"][0]
    state = httpx.get(f"{_origin(sandbox)}/api/state", headers={"X-Threadline-Token": token}, timeout=15)
    typed = [m["text"] for m in state.json()["messages"] if not m.get("bot_id")]
    assert len(typed) == 1 and "list the files" in typed[0]  # the person's mention, and no evil one
    expect(page.locator("#channel-messages")).not_to_contain_text("evil")
