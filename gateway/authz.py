"""Who may do what: start sessions (allowlists) and act on one (its initiator and operators).

Operators are user ids (U…/W…) or user-group ids (S…) from SLACK_OPERATORS; a group's members
come from `usergroups.users.list`, cached in Redis so every web process shares one answer and a
click does not wait on Slack more than once per `GROUP_CACHE_TTL_S`.
"""

from __future__ import annotations

import json
import logging

from redis import Redis
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from jobs.keys import SessionKey, usergroup_cache_key
from jobs.session.store import SessionStore
from jobs.settings import Settings

log = logging.getLogger(__name__)

GROUP_CACHE_TTL_S = 300  # membership changes are rare; five minutes of staleness is acceptable
GROUP_PREFIX = "S"


class Authz:
    def __init__(self, settings: Settings, redis: Redis, client: WebClient) -> None:
        self.settings = settings
        self.redis = redis
        self.client = client

    def may_start(self, channel: str, user: str) -> bool:
        """The allowlists (empty = everyone): who may start or feed a session, and where."""
        channels, users = self.settings.allowed_channels, self.settings.allowed_users
        user_ok = not users or user in users or user in self.settings.allowed_bots
        return (not channels or channel in channels) and user_ok

    def may_act(self, key: SessionKey, user: str) -> bool:
        """Stop, resume, compact, approve: the thread's initiator and the operators."""
        return self.owner(key) == user or self.is_operator(key.team, user)

    def owner(self, key: SessionKey) -> str | None:
        return SessionStore(self.redis, key).meta.read().owner

    def is_operator(self, team: str, user: str) -> bool:
        operators = self.settings.operators
        if user in operators:
            return True
        groups = sorted(item for item in operators if item.startswith(GROUP_PREFIX))
        return any(user in self.group_members(team, group) for group in groups)

    def group_members(self, team: str, group: str) -> frozenset[str]:
        cache_key = usergroup_cache_key(team, group)
        cached = self.redis.get(cache_key)
        if cached is not None:
            return frozenset(json.loads(cached))
        try:
            users = self.client.usergroups_users_list(usergroup=group, team_id=team).get("users") or []
        except SlackApiError as error:
            # Not cached: the next check asks again instead of locking operators out for minutes.
            log.warning("could not list user group %s of %s: %s", group, team, error.response.get("error"))
            return frozenset()
        self.redis.set(cache_key, json.dumps(sorted(users)), ex=GROUP_CACHE_TTL_S)
        return frozenset(users)

    def refusal(self, key: SessionKey) -> str:
        owner = self.owner(key)
        starter = f"<@{owner}>, who started this session," if owner else "the person who started this session"
        return f"Only {starter} or an operator can do that."
