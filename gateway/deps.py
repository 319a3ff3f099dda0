"""What every listener needs, built once per process: settings, Redis, the Slack client, authz."""

from __future__ import annotations

from dataclasses import dataclass

from redis import Redis
from slack_sdk import WebClient

from gateway.authz import Authz
from jobs.settings import Settings


@dataclass(frozen=True)
class Deps:
    settings: Settings
    redis: Redis
    client: WebClient
    authz: Authz

    @classmethod
    def build(cls, settings: Settings, redis: Redis, client: WebClient) -> Deps:
        return cls(settings, redis, client, Authz(settings, redis, client))

    @property
    def turn_timeout_s(self) -> int:
        return self.settings.TURN_TIMEOUT_SECONDS
