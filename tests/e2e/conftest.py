from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.sandbox.fake_llm import FakeLLM
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import Stack


@pytest.fixture
def stack(tmp_path: Path, redis, redis_url: str, fake_slack: FakeSlack, fake_llm: FakeLLM) -> Iterator[Stack]:
    running = Stack(tmp_path, redis_url, fake_slack.api_url, fake_llm.base_url, APPROVAL_TOOLS="").start()
    yield running
    running.stop()
