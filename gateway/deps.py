"""What every listener needs, built once per process: settings, Redis, the Slack client, authz,
and the fast-failing client and name cache the listeners read Slack with before they answer."""

from __future__ import annotations

from dataclasses import dataclass

from redis import Redis
from slack_sdk import WebClient

from gateway.authz import Authz
from gateway.people import People
from gateway.slack_client import web_client
from gateway.thread_context import READ_TIMEOUT_S
from jobs.settings import Settings


@dataclass(frozen=True)
class Deps:
    settings: Settings
    redis: Redis
    client: WebClient
    authz: Authz
    # No retries and a short timeout: asked while Slack waits for the answer to its event.
    reader: WebClient
    people: People

    @classmethod
    def build(cls, settings: Settings, redis: Redis, client: WebClient) -> Deps:
        reader = web_client(settings, retry_handlers=[], timeout=READ_TIMEOUT_S)
        return cls(settings, redis, client, Authz(settings, redis, client), reader, People(redis, reader))

    @property
    def turn_timeout_s(self) -> int:
        return self.settings.TURN_TIMEOUT_SECONDS
