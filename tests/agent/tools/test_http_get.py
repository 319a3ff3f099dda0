import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent.tools.builtin import HttpGet
from agent.tools.builtin.http_policy import HttpGetPolicy
from tests.agent.tools.helpers import call, executor_with, run_one

pytestmark = pytest.mark.anyio
ROUTES = {
    "/text": (200, "text/plain; charset=utf-8", "héllo".encode()),
    "/json": (200, "application/json", b'{"ok": true}'),
    "/big": (200, "text/plain", b"b" * 5000),
    "/png": (200, "image/png", b"\x89PNG\r\n"),
    "/missing": (404, "text/plain", b"no such page"),
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/text")
            self.end_headers()
            return
        if self.path == "/slow":
            threading.Event().wait(3)
        status, content_type, body = ROUTES.get(self.path, ROUTES["/missing"])
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the timeout test)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def executor(tmp_path):
    # The test server is local: opened explicitly, as an operator would with HTTP_GET_ALLOW_HOSTS.
    return executor_with(HttpGet(HttpGetPolicy.from_allowlist("127.0.0.1")), workspace=tmp_path)


async def get(executor, url, **extra):
    return await run_one(executor, call("h", "http_get", {"url": url, **extra}))


async def test_fetches_text(executor, server):
    result = await get(executor, f"{server}/text")
    assert result.output == (
        f"status: 200 OK\nurl: {server}/text\ncontent-type: text/plain; charset=utf-8\n\nhéllo"
    )
    assert not result.is_error


async def test_follows_redirects_and_reads_json(executor, server):
    assert (await get(executor, f"{server}/redirect")).output.endswith("\n\nhéllo")
    assert (await get(executor, f"{server}/json")).output.endswith('\n\n{"ok": true}')


async def test_caps_the_body(executor, server):
    result = await get(executor, f"{server}/big", max_bytes=100)
    assert result.output.endswith("\n\n" + "b" * 100 + "\n[body cut at 100 bytes]")


async def test_does_not_show_binary_bodies(executor, server):
    result = await get(executor, f"{server}/png")
    assert result.output.endswith("content-type: image/png\n\n[6 bytes of non-text content not shown]")


async def test_http_errors_are_error_results(executor, server):
    result = await get(executor, f"{server}/missing")
    assert result.is_error
    assert result.output.startswith("status: 404 Not Found")


async def test_times_out(executor, server):
    result = await get(executor, f"{server}/slow", timeout=1)
    assert result.output == f'Tool "http_get" failed: GET {server}/slow timed out after 1 seconds.'


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "not a url"])
async def test_only_http_and_https(executor, url):
    result = await get(executor, url)
    assert result.is_error
    assert result.output == (
        f'Tool "http_get" failed to resolve execution: Only http and https URLs can be fetched, not {url!r}.'
    )


async def test_connection_failures_are_reported(executor):
    result = await get(executor, "http://127.0.0.1:9/")
    assert result.output.startswith('Tool "http_get" failed: GET http://127.0.0.1:9/ failed:')


def test_http_get_declares_no_file_access(tmp_path, server):
    from agent.tools.base import ToolContext
    from agent.tools.builtin.http_get import HttpGetParams
    from agent.tools.cancel import CancelSignal

    context = ToolContext(workspace=tmp_path, signal=CancelSignal())
    execution = HttpGet().resolve_execution(HttpGetParams(url=f"{server}/text"), context)
    assert execution.accesses == ()
