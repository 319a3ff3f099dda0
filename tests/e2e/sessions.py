"""Test setup for sessions: a real session started through Slack, then put in a given state.

A test about what a control answers (who may act, which session a link names) may write the
state a turn would write, through jobs' own API. A test that a control stops a turn starts a
real one instead (`BusyTurns`): a turn whose `shell` command runs until something stops it.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass, field
from typing import Any

from redis import Redis

from agent.testing import FakeLLM, calls, text
from gateway.links import thread_link
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.stack import Stack
from jobs.control import submit_input
from jobs.keys import SessionKey, lease_key
from jobs.queues import schedule_delivery
from jobs.session.notices import Notice
from jobs.session.state import State, set_state
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput
from tests.polling import wait_for
from tests.sandboxing import host_pids, sleep_marker
from tests.slack_events import command, mention
from tests.thread_view import bot_messages, thread_texts

SHELL_TIMEOUT_S = 300  # far longer than any test waits: only a stop ends the command
STOPPED_BY_THE_LOOP = "Stopped by <@{by}>. `!resume` continues."  # jobs/turn/runner.py, not the janitor


def open_session(
    stack: Stack, fake_slack: FakeSlack, fake_llm: FakeLLM, *, owner: str = "W222", channel: str = "C111"
) -> SessionKey:
    """A session started by `owner`'s mention and answered once."""
    root = fake_slack.add_user_message(channel, f"<@{BOT_USER_ID}> start", user=owner)
    fake_llm.script(text("started"))
    assert stack.send_event(mention("start", ts=root["ts"], user=owner, channel=channel)).status_code == 200
    wait_for(lambda: bot_messages(fake_slack, channel, root["ts"]), what="the first answer")
    key = SessionKey(team="T111", channel=channel, thread_ts=root["ts"])
    redis = redis_of(stack)
    wait_for(lambda: turn_ended(redis, key), what="the first turn to end")
    return key


def turn_ended(redis: Redis, key: SessionKey) -> bool:
    """Idle, and the lease let go: a turn writes idle first, and until the lease is gone what is
    said in the thread goes to its inbox ("sent to the running turn")."""
    return SessionStore(redis, key).meta.read().state == "idle" and not redis.exists(lease_key(key))


def redis_of(stack: Stack) -> Redis:
    return Redis.from_url(stack.env["REDIS_URL"])


def put_in_state(redis: Redis, key: SessionKey, state: State) -> None:
    set_state(SessionStore(redis, key), state)


def post(redis: Redis, key: SessionKey, notice: Notice) -> str:
    """Queue a notice as a turn does, and the delivery that posts it."""
    notice_id = SessionStore(redis, key).post_notice(notice)
    schedule_delivery(redis, key)
    return notice_id


def link(fake_slack: FakeSlack, key: SessionKey) -> str:
    return thread_link(fake_slack.url, key.channel, key.thread_ts)


def response_url(fake_slack: FakeSlack, name: str = "1") -> str:
    return f"{fake_slack.url}/response/{name}"


def slash_command(
    stack: Stack, fake_slack: FakeSlack, words: str, *, user: str = "W222", name: str = "/agent"
) -> str:
    """Send `/agent <words>` to web as Slack does; returns the ephemeral answer's text."""
    response = stack.send_command(command(words, user=user, response_url=response_url(fake_slack), name=name))
    assert response.status_code == 200
    return str(response.json()["text"])


@dataclass(frozen=True)
class BusyTurn:
    key: SessionKey
    marker: str  # `sleep <marker>` is the turn's shell command, found on the host by it


@dataclass
class BusyTurns:
    """Real turns of a running stack, each busy in a `shell` command until something stops it.

    The stack must waive approval for shell (tests.unattended.UNATTENDED, the fixtures' default),
    else the turn parks instead of running the command.
    """

    redis: Redis
    slack: FakeSlack
    llm: FakeLLM
    markers: list[str] = field(default_factory=list)

    def start(self, *, owner: str = "W222", channel: str = "C111") -> BusyTurn:
        """A session `owner` starts with a mention, once its turn's shell command runs."""
        marker = sleep_marker()
        self.llm.script(calls(("c1", "shell", {"command": f"sleep {marker}", "timeout": SHELL_TIMEOUT_S})))
        root = self.slack.add_user_message(channel, f"<@{BOT_USER_ID}> long build", user=owner)
        key = SessionKey(team="T111", channel=channel, thread_ts=root["ts"])
        said = UserInput(text="long build", user=owner, ts=root["ts"])
        self.markers.append(marker)
        submit_input(self.redis, key, said, turn_timeout_s=3600)
        wait_for(lambda: host_pids(marker), timeout=30, what="the turn's shell command to run")
        assert SessionStore(self.redis, key).meta.read().state == "running"
        return BusyTurn(key=key, marker=marker)

    def assert_stopped(self, turn: BusyTurn, by: str = "W222") -> None:
        """The turn really ended: cancelled, its command gone, the thread told, the model not asked again."""
        store = SessionStore(self.redis, turn.key)
        wait_for(lambda: store.meta.read().state == "cancelled", what="the turn to end cancelled")
        wait_for(lambda: not host_pids(turn.marker), timeout=15, what="the shell command to be gone")
        said = STOPPED_BY_THE_LOOP.format(by=by)
        wait_for(
            lambda: any(
                said in shown for shown in thread_texts(self.slack, turn.key.channel, turn.key.thread_ts)
            ),
            what=f"{said!r} in the thread",
        )
        # Not asked again: no request carries the stopped call's result. (A count of requests
        # would also catch a slow duplicate of the first one, retried by the client under load.)
        assert not [r for r in self.llm.requests if _carries_result(r, "c1")]

    def assert_still_running(self, turn: BusyTurn) -> None:
        assert SessionStore(self.redis, turn.key).meta.read().state == "running"
        assert host_pids(turn.marker)

    def close(self) -> None:
        """Kill whatever command a failed test left running."""
        for pid in [pid for marker in self.markers for pid in host_pids(marker)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _carries_result(request: dict[str, Any], tool_call_id: str) -> bool:
    return any(m.get("role") == "tool" and m.get("tool_call_id") == tool_call_id for m in request["messages"])
