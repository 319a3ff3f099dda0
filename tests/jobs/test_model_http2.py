"""The worker's model client speaks HTTP/2 where an https:// provider offers it (LLM_HTTP2), and
HTTP/1.1 where it does not or where the setting is off: a real TLS provider (hypercorn) in its
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


def test_a_provider_offering_http2_is_spoken_to_in_http2_by_default(provider: TLSProvider) -> None:
    assert one_step(provider) == "done"
    assert provider.stats()["versions"] == {"2": 1}


def test_llm_http2_false_keeps_to_http1(provider: TLSProvider) -> None:
    assert one_step(provider, LLM_HTTP2="false") == "done"
    assert provider.stats()["versions"] == {"1.1": 1}


@pytest.mark.parametrize("provider", [False], indirect=True)
def test_a_provider_without_http2_is_spoken_to_in_http1(provider: TLSProvider) -> None:
    assert one_step(provider) == "done"
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
