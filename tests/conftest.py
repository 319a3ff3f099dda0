"""Shared fixtures: a real Redis (flushed around each test) and the HTTP fakes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis import Redis

from gateway.sandbox.fake_llm import FakeLLM
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import BOT_TOKEN, Stack

# Never the developer's REDIS_URL: these tests flush the database they are given.
TEST_REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture
def redis_url() -> str:
    return TEST_REDIS_URL


@pytest.fixture
def redis(redis_url: str) -> Iterator[Redis]:
    client = Redis.from_url(redis_url)
    try:
        client.ping()
    except Exception as error:  # pragma: no cover - environment problem, said plainly
        pytest.fail(f"no Redis at TEST_REDIS_URL={redis_url} ({error}); run `make test` or .ci/run")
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    fake = FakeSlack(bot_token=BOT_TOKEN).start()
    yield fake
    fake.stop()


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    fake = FakeLLM().start()
    yield fake
    fake.stop()


@pytest.fixture
def stack(tmp_path: Path, redis, redis_url: str, fake_slack: FakeSlack, fake_llm: FakeLLM) -> Iterator[Stack]:
    running = Stack(tmp_path, redis_url, fake_slack.api_url, fake_llm.base_url, APPROVAL_TOOLS="").start()
    yield running
    running.stop()
