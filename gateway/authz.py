"""Who may do what: start sessions (allowlists, and no outsiders), see one from a link (its
channel's members, its initiator and operators), act on one (its initiator and operators) and
approve its tool calls (the approvers, never simply whoever asked).

Operators are user ids (U…/W…) or user-group ids (S…) from SLACK_OPERATORS; a group's members
come from `usergroups.users.list`, cached in Redis so every web process shares one answer and a
click does not wait on Slack more than once per `GROUP_CACHE_TTL_S`. Every list may scope an
entry to one workspace (`T123:U456`, jobs.settings.listed).

Outsiders, guests and another organisation's people in a Slack Connect channel or DM, give no
input unless SLACK_ALLOW_EXTERNAL or SLACK_ALLOWED_USERS lets them: an event's `user_team` says
so when it differs from the workspace; otherwise `users.info` does (events never carry guest
status), cached like the groups. A channel's members come from `conversations.members`, page
by page, cached as a Redis set.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from redis import Redis
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from gateway.people import remember_name
from jobs.keys import SessionKey, channel_members_cache_key, user_kind_cache_key, usergroup_cache_key
from jobs.redis_text import text
from jobs.session.store import SessionStore
from jobs.settings import Settings, in_team, listed
from jobs.turn.tools import tools_that_ask

log = logging.getLogger(__name__)

GROUP_CACHE_TTL_S = 300  # membership changes are rare; five minutes of staleness is acceptable
USER_CACHE_TTL_S = 300  # a guest made a member (or the reverse) waits this long, like a group change
MEMBERS_CACHE_TTL_S = 300  # someone who joined waits this long at worst; one who left keeps it as long
MEMBERS_PAGE = 999  # Slack's largest page (a limit under 1000): fewest calls inside a command's 3 s
MEMBERS_SENTINEL = ""  # always in the cached set, so a cached empty answer is not a miss
GROUP_PREFIX = "S"
MEMBER, GUEST, EXTERNAL = "member", "guest", "external"

OUTSIDER = (
    "You can't use the agent here: it works for this workspace's members, not for guests and people "
    "from other organisations (an admin can allow them)."
)
NOT_A_MEMBER = (
    "You can't use that thread from here: you are not in its channel (the person who started it "
    "and operators can)."
)
UNCHECKED = "I couldn't check your account with Slack just now. Try again in a moment."


def nobody_approves(settings: Settings) -> str | None:
    """What is wrong when calls will wait for approval that nobody here may give; None if fine."""
    asking = tools_that_ask(settings)
    if not asking or not settings.nobody_approves:
        return None
    return (
        f"{', '.join(asking)} ask for approval, but nobody may approve: set SLACK_APPROVERS "
        "(or SLACK_OPERATORS), or SLACK_ALLOWED_USERS to let that group approve its own calls"
    )


def warn_if_nobody_approves(settings: Settings) -> None:
    problem = nobody_approves(settings)
    if problem is not None:
        log.warning("%s", problem)


class Authz:
    def __init__(self, settings: Settings, redis: Redis, client: WebClient) -> None:
        self.settings = settings
        self.redis = redis
        self.client = client

    def may_start(self, team: str, channel: str, user: str) -> bool:
        """The allowlists (empty = everyone): who may start or feed a session, and where."""
        channels, users = self.settings.allowed_channels, self.settings.allowed_users
        user_ok = not users or self._admitted(team, user)
        return (not channels or channel in channels) and user_ok

    def outsider_refusal(self, team: str, user: str, user_team: str | None = None) -> str | None:
        """Why `user` may give no input in `team`: a guest, or another organisation's (the event's
        `user_team`, else users.info). None for the workspace's members and whoever is let in."""
        if self.settings.SLACK_ALLOW_EXTERNAL or self._admitted(team, user):
            return None
        if user_team is not None and user_team != team:
            return OUTSIDER
        kind = self.user_kind(team, user)
        if kind is None:
            return UNCHECKED  # fail closed: a guest is never let in because Slack did not answer
        return None if kind == MEMBER else OUTSIDER

    def _admitted(self, team: str, user: str) -> bool:
        """Named on SLACK_ALLOWED_USERS, or an allowed bot (bots have no users.info to ask)."""
        settings = self.settings
        return listed(settings.allowed_users, team, user) or listed(settings.allowed_bots, team, user)

    def user_kind(self, team: str, user: str) -> str | None:
        """MEMBER, GUEST or EXTERNAL from users.info, cached; None when Slack could not say."""
        cache_key = user_kind_cache_key(team, user)
        cached = self.redis.get(cache_key)
        if cached is not None:
            return text(cached)
        try:
            info = self.client.users_info(user=user).get("user") or {}
        except SlackApiError as error:
            log.warning("could not look up user %s of %s: %s", user, team, error.response.get("error"))
            return None
        kind = _kind(info, team)
        pipe = self.redis.pipeline(transaction=False)
        pipe.set(cache_key, kind, ex=USER_CACHE_TTL_S)
        remember_name(pipe, team, user, info)  # the model reads the author by it (gateway.people)
        pipe.execute()
        return kind

    def may_act(self, key: SessionKey, user: str) -> bool:
        """Stop, resume, compact: the thread's initiator and the operators."""
        return self.owner(key) == user or self.is_operator(key.team, user)

    def may_see(self, key: SessionKey, user: str) -> bool:
        """Status, skills, Inspect and `/agent skill` on a linked thread: the channel's members,
        the initiator and the operators; nobody else learns even whether a session is there."""
        if self.owner(key) == user:
            return True
        return self.in_channel(key.team, key.channel, user) or self.is_operator(key.team, user)

    def in_channel(self, team: str, channel: str, user: str) -> bool:
        cache_key = channel_members_cache_key(team, channel)
        pipe = self.redis.pipeline(transaction=False)
        pipe.exists(cache_key)
        pipe.sismember(cache_key, user)
        cached, member = pipe.execute()
        if cached:
            return bool(member)
        members = self.channel_members(team, channel)
        if members is None:
            return False  # not cached: asked again next time
        pipe = self.redis.pipeline()
        pipe.delete(cache_key)
        pipe.sadd(cache_key, MEMBERS_SENTINEL, *members)
        pipe.expire(cache_key, MEMBERS_CACHE_TTL_S)
        pipe.execute()
        return user in members

    def channel_members(self, team: str, channel: str) -> list[str] | None:
        """Every member of the channel, following Slack's cursor; None when Slack would not say."""
        members: list[str] = []
        cursor = None
        try:
            while True:
                page = self.client.conversations_members(channel=channel, limit=MEMBERS_PAGE, cursor=cursor)
                members.extend(page.get("members") or [])
                cursor = (page.get("response_metadata") or {}).get("next_cursor")
                if not cursor:
                    return members
        except SlackApiError as error:
            log.warning("could not list members of %s in %s: %s", channel, team, error.response.get("error"))
            return None

    def may_approve(self, key: SessionKey, user: str) -> bool:
        """Approve or deny a call: the approvers. With none, the initiator of a session started
        by a closed group (SLACK_ALLOWED_USERS): that group chose to trust itself. Otherwise
        nobody, so asking for `shell` never means approving it oneself."""
        if self.settings.approvers:
            return self._listed(key.team, user, self.settings.approvers)
        return bool(self.settings.allowed_users) and self.owner(key) == user

    def approval_refusal(self, key: SessionKey) -> str:
        if self.settings.nobody_approves:
            return (
                "Nobody can approve calls here yet: an admin sets SLACK_APPROVERS (user or user-group ids)."
            )
        if self.settings.approvers:
            return "Only an approver (SLACK_APPROVERS) can approve or deny this call."
        return self.refusal(key)

    def owner(self, key: SessionKey) -> str | None:
        return SessionStore(self.redis, key).meta.read().owner

    def is_operator(self, team: str, user: str) -> bool:
        return self._listed(team, user, self.settings.operators)

    def _listed(self, team: str, user: str, ids: frozenset[str]) -> bool:
        """`user` is one of `ids` in `team`, or a member of one of its user groups there."""
        if listed(ids, team, user):
            return True
        groups = sorted(item for item in in_team(ids, team) if item.startswith(GROUP_PREFIX))
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


def _kind(info: Mapping[str, Any], team: str) -> str:
    """A guest (single- or multi-channel), another organisation's person, or a member of `team`;
    in an org-wide install a member of any of the organisation's workspaces that include `team`."""
    if info.get("is_restricted") or info.get("is_ultra_restricted"):
        return GUEST
    enterprise = info.get("enterprise_user")
    teams = enterprise.get("teams") if isinstance(enterprise, Mapping) else None
    if info.get("team_id") == team or (isinstance(teams, list) and team in teams):
        return MEMBER
    return EXTERNAL
