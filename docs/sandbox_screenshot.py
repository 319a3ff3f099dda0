"""Take docs/sandbox.png: a finished, streamed turn in a running sandbox (its steps' task
timelines and the answer's feedback buttons), in headless Chromium.

make run                                   # in another terminal; note the Sandbox URL
.venv/bin/python docs/sandbox_screenshot.py 'http://127.0.0.1:3001/?token=…' docs/sandbox.png

The URL is the one `make run` printed, token and all: the page's API answers nothing without it.
"""

from __future__ import annotations

import sys

from playwright.sync_api import expect, sync_playwright

CHROMIUM = "/usr/bin/chromium"
TIMEOUT_MS = 30_000


def main(url: str, out: str) -> None:
    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page(viewport={"width": 1280, "height": 720}, device_scale_factor=1)
        page.goto(url)
        page.fill("#channel-input", "@agent list the files")
        page.press("#channel-input", "Enter")
        thread = page.locator("#thread-messages")
        expect(thread).to_contain_text("here is what the tool returned")
        expect(thread.locator(".task-complete").first).to_be_visible()  # the step's tool call, done
        expect(thread.locator(".streaming")).to_have_count(0)  # every stream stopped
        expect(thread.locator(".reaction").first).to_be_visible()  # ✅ on the mention: the turn ended
        page.screenshot(path=out)
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
