from __future__ import annotations

import pytest

from gateway.sandbox.fake_slack import FakeSlack


@pytest.fixture
def slack(fake_slack: FakeSlack) -> FakeSlack:
    """The fake Slack the delivery worker talks to (its bot token: gateway.sandbox.stack's)."""
    return fake_slack
