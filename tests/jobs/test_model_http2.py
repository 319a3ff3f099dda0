"""The worker's model client speaks HTTP/1.1 unless LLM_HTTP2 is on; then HTTP/2 where an https://
provider offers it, and HTTP/1.1 where it does not: a real TLS provider (hypercorn) in its
own process, the client built from settings as a worker builds it, in a process that trusts
the provider's certificate through SSL_CERT_FILE as an operator with a private CA would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.tls_provider import TLSProvider

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the certificate")

ONE_STEP = """
import asyncio
from agent.messages import user_message
from agent.model.base import ModelRequest
from jobs.runtime import build_model
from jobs.settings import Settings

model = build_model(Settings.load())
answer = asyncio.run(model.complete(ModelRequest(messages=[user_message("hello")])))
print(answer.message.text())
"""


def one_step(provider: TLSProvider, **settings: str) -> str:
    env = {**os.environ, "SSL_CERT_FILE": str(provider.cert), "LLM_BASE_URL": provider.base_url,
           "LLM_MODEL": "m", **settings}  # fmt: skip
    env.pop("SSL_CERT_DIR", None)
    done = subprocess.run(
        [sys.executable, "-c", ONE_STEP], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def run_python(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def provider(tmp_path: Path, request: pytest.FixtureRequest) -> TLSProvider:
    started = TLSProvider(tmp_path, http2=getattr(request, "param", True)).start()
    request.addfinalizer(started.stop)
    return started


def test_http1_by_default_even_where_the_provider_offers_http2(provider: TLSProvider) -> None:
    assert one_step(provider) == "done"
    assert provider.stats()["versions"] == {"1.1": 1}


def test_llm_http2_speaks_http2_to_a_provider_offering_it(provider: TLSProvider) -> None:
    assert one_step(provider, LLM_HTTP2="true") == "done"
    assert provider.stats()["versions"] == {"2": 1}


@pytest.mark.parametrize("provider", [False], indirect=True)
def test_llm_http2_falls_back_to_http1_where_the_provider_offers_only_that(provider: TLSProvider) -> None:
    assert one_step(provider, LLM_HTTP2="true") == "done"
    assert provider.stats()["versions"] == {"1.1": 1}


UNWRAPPED_STEP = """
import asyncio, os
from agent.messages import user_message
from agent.model.base import ModelRequest
from agent.model.openai import OpenAICompatibleModel

model = OpenAICompatibleModel(os.environ["LLM_BASE_URL"], "m", http2=True)  # no retries around it
asyncio.run(model.complete(ModelRequest(messages=[user_message("hello")])))
"""


def test_an_untrusted_certificate_is_refused(provider: TLSProvider, tmp_path: Path) -> None:
    """The trust comes from SSL_CERT_FILE, not from verification being off."""
    (tmp_path / "other").mkdir()
    other = TLSProvider(tmp_path / "other")
    env = {**os.environ, "SSL_CERT_FILE": str(other.cert), "LLM_BASE_URL": provider.base_url}
    done = subprocess.run(
        [sys.executable, "-c", UNWRAPPED_STEP], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "CERTIFICATE_VERIFY_FAILED" in done.stderr
    assert provider.stats()["versions"] == {}


CANCELLED_STEPS = """
import asyncio, sys
from agent.messages import user_message
from agent.model.base import ModelRequest
from jobs.runtime import build_model
from jobs.settings import Settings
from jobs.turn.host import host

turns = host()  # as a turn worker runs: the model's connections are kept on its loop
model = build_model(Settings.load())
request = ModelRequest(messages=[user_message("write at length")])


class FirstText:
    def __init__(self) -> None:
        self.seen = asyncio.Event()

    def on_text(self, delta: str) -> None:
        self.seen.set()

    def on_tool_call(self, call: object) -> None:
        pass


async def cancelled_half_way() -> None:
    listener = FirstText()
    step = asyncio.create_task(model.complete(request, listener))
    await listener.seen.wait()
    step.cancel()
    try:
        await step
    except asyncio.CancelledError:
        pass


for _ in range(int(sys.argv[1])):
    turns.submit(cancelled_half_way()).result()
answer = turns.submit(asyncio.wait_for(model.complete(request), 30)).result()
print(answer.message.text().split()[-1])
"""


def test_a_worker_s_model_connection_outlives_many_cancelled_steps(provider: TLSProvider) -> None:
    """People stop turns (`!stop`, Slack's Stop, a deploy hands them back) in the middle of a
    streamed step. With httpx's HTTP/2 each such stream stays counted as open on the shared
    connection (encode/httpcore#1022) until, after 100, every new request on it fails: why
    LLM_HTTP2 is off by default. The default must survive far more than 100."""
    env = {**os.environ, "SSL_CERT_FILE": str(provider.cert), "LLM_BASE_URL": f"{provider.base_url}/slow/v1",
           "LLM_MODEL": "m"}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", CANCELLED_STEPS, "120"], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "done"
    assert provider.stats()["versions"] == {"1.1": 121}
