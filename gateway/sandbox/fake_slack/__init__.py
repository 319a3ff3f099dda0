"""A fake Slack Web API over HTTP that keeps real state and answers with Slack's error codes.

`FakeSlack` serves it (server.py); `SlackState` is what it remembers (state.py) and
`SlackMethods` the methods it answers (methods.py). A test scripts failures with `Fault`;
the workspace it plays has the ids below.
"""

from gateway.sandbox.fake_slack.server import FakeSlack
from gateway.sandbox.fake_slack.state import (
    APP_TOKEN,
    BOT_ID,
    BOT_USER_ID,
    TEAM_ID,
    Call,
    Fault,
    SlackError,
    SlackState,
)

__all__ = [
    "APP_TOKEN",
    "BOT_ID",
    "BOT_USER_ID",
    "TEAM_ID",
    "Call",
    "FakeSlack",
    "Fault",
    "SlackError",
    "SlackState",
]
