"""`threadline sandbox` prints what it runs against, without the credentials in those URLs."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from agent.testing import FakeLLM
from gateway.sandbox.ports import free_port
from gateway.sandbox.stack import SOURCE_ROOT, THREADLINE
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

SECRET = "planted-sandbox-secret-d41c"


def test_the_sandbox_prints_its_urls_and_starts_its_processes_without_secrets(
    tmp_path: Path, redis, redis_url: str, fake_llm: FakeLLM
):
    scheme, rest = redis_url.split("://", 1)
    scheme_llm, rest_llm = fake_llm.base_url.split("://", 1)
    env = {
        **os.environ,
        "REDIS_URL": f"{scheme}://default:{SECRET}@{rest}",  # a Redis without AUTH accepts any password
        "LLM_BASE_URL": f"{scheme_llm}://key:{SECRET}@{rest_llm}",
        "LLM_MODEL": "fake-model",
        "SLACK_API_URL": f"https://bot:{SECRET}@slack.example/api/",  # replaced by the fake: named in a note
        "AGENT_WORKDIR": str(tmp_path / "workspaces"),
        "PORT": str(free_port()),
        "PYTHONPATH": str(SOURCE_ROOT),
    }
    output = tmp_path / "sandbox.out"
    with output.open("wb") as sink:
        sandbox = subprocess.Popen(
            [THREADLINE, "sandbox", "--port", str(free_port())], env=env, cwd=tmp_path,
            stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        wait_for(lambda: "threadline sandbox: ready at" in output.read_text(), timeout=60, what="the sandbox")
    finally:
        os.killpg(sandbox.pid, signal.SIGTERM)
        try:
            sandbox.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(sandbox.pid, signal.SIGKILL)
            sandbox.wait(timeout=10)
    printed = output.read_text()
    assert f"  redis   {scheme}://default:***@{rest}" in printed
    assert f"  model   {scheme_llm}://key:***@{rest_llm} (fake-model)" in printed
    assert "SLACK_API_URL=https://bot:***@slack.example/api/ is replaced" in printed
    assert SECRET not in printed
