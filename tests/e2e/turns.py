"""Helpers for end-to-end turn tests: a session, its wire log and its outbox, read from Redis."""

from __future__ import annotations

import itertools

from redis import Redis

from agent.fold import fold
from agent.messages import Message
from gateway.sandbox.fake_slack import FakeSlack
from jobs.control import submit_input
from jobs.keys import SessionKey
from jobs.session.notices import Notice
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput

TEAM, CHANNEL = "T111", "C111"
_ts = itertools.count(1)


class Session:
    def __init__(self, redis: Redis, slack: FakeSlack, text: str = "start", user: str = "W222") -> None:
        root = slack.add_user_message(CHANNEL, text, user=user)
        self.redis = redis
        self.slack = slack
        self.key = SessionKey(team=TEAM, channel=CHANNEL, thread_ts=root["ts"])
        self.store = SessionStore(redis, self.key)
        self.say(text, ts=root["ts"], user=user)

    @classmethod
    def of(cls, redis: Redis, slack: FakeSlack, key: SessionKey) -> Session:
        """The session of a thread started some other way."""
        session = cls.__new__(cls)
        session.redis, session.slack, session.key = redis, slack, key
        session.store = SessionStore(redis, key)
        return session

    def say(self, text: str, *, ts: str | None = None, user: str = "W222") -> str:
        ts = ts or self.slack.add_user_message(CHANNEL, text, user=user, thread_ts=self.key.thread_ts)["ts"]
        return submit_input(self.redis, self.key, UserInput(text=text, user=user, ts=ts), turn_timeout_s=3600)

    def state(self) -> str:
        return self.store.meta.read().state

    def wire(self) -> list[dict]:
        return self.store.read_wire()

    def history(self) -> list[Message]:
        return fold(self.wire())

    def notices(self, kind: str | None = None) -> list[Notice]:
        return [n for _, n in self.store.notices() if kind is None or n.kind == kind]

    def bot_texts(self) -> list[str]:
        return [m.get("text", "") for m in self.slack.thread(CHANNEL, self.key.thread_ts) if m.get("bot_id")]
