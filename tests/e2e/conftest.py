"""Fixtures of the end-to-end tests: real turns kept busy for the controls that stop them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis import Redis

from agent.testing import FakeLLM
from gateway.sandbox.fake_slack import FakeSlack
from tests.e2e.sessions import BusyTurns


@pytest.fixture
def busy_turns(redis: Redis, fake_slack: FakeSlack, fake_llm: FakeLLM) -> Iterator[BusyTurns]:
    """Start after the test's stack: busy_turns.start() waits for a worker to run the command."""
    turns = BusyTurns(redis, fake_slack, fake_llm)
    yield turns
    turns.close()
