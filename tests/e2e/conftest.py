from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gateway.sandbox.fake_llm import FakeLLM
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import Stack

StackFactory = Callable[..., Stack]


@pytest.fixture
def make_stack(
    tmp_path: Path, redis, redis_url: str, fake_slack: FakeSlack, fake_llm: FakeLLM
) -> Iterator[StackFactory]:
    """A stack with settings of the test's choosing: make_stack(workers=2, SLACK_OPERATORS="U9").

    Like the shared `stack` fixture, no tool needs approval unless the test sets APPROVAL_TOOLS.
    """
    started: list[Stack] = []

    def make(*, workers: int = 1, socket_mode: object = None, **env: str) -> Stack:
        env = {"APPROVAL_TOOLS": "", **env}
        running = Stack(tmp_path, redis_url, fake_slack.api_url, fake_llm.base_url, **env)
        started.append(running)
        return running.start(workers=workers, socket_mode=socket_mode)

    yield make
    for running in started:
        running.stop()
