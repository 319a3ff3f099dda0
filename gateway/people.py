"""Who is who: the name a person goes by, from `users.info`, cached in Redis.

The model reads people by name (jobs.mentions). A name is looked up once per person per
`NAME_CACHE_TTL_S` for every web process (gateway.authz stores the name too when it asks
`users.info` about an author), so a message from someone already seen costs one Redis read;
someone with no name is cached as "" and not asked again either.
The lookups happen before Slack gets its answer, so they are bounded: a short timeout per
call, a deadline for all of them, at most `MAX_LOOKUPS` at once; a person not named in time
stays an id (`<@U123>`) and is named next time.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from redis import Redis
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from jobs.keys import user_name_cache_key
from jobs.mentions import clean_name
from jobs.redis_text import text

log = logging.getLogger(__name__)

NAME_CACHE_TTL_S = 3600  # a renamed person shows by the old name for an hour at most
MAX_LOOKUPS = 16  # users.info calls for one message; a thread of more new people names the rest later
PARALLEL_LOOKUPS = 16  # users.info is Tier 4 (100+ a minute): all of one message's lookups in one round trip
PERSON_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")  # bots (B…) have no users.info


def display_name(info: Mapping[str, Any]) -> str:
    """What Slack shows for a person: their display name, else their real name; "" if neither.
    Not `name`: Slack keeps that legacy username for old clients and advises against it."""
    profile = info.get("profile")
    profile = profile if isinstance(profile, Mapping) else {}
    for value in (profile.get("display_name"), profile.get("real_name"), info.get("real_name")):
        name = clean_name(value) if isinstance(value, str) else ""
        if name:
            return name
    return ""


def remember_name(redis: Redis, team: str, user: str, info: Mapping[str, Any]) -> None:
    """Keep the name from a users.info answer, "" for a person without one (not asked again)."""
    redis.set(user_name_cache_key(team, user), display_name(info), ex=NAME_CACHE_TTL_S)


class People:
    """Names by user id. `client` should fail fast (no retries, a short timeout): it is asked
    while Slack waits for its answer."""

    def __init__(self, redis: Redis, client: WebClient) -> None:
        self.redis = redis
        self.client = client

    def names(self, team: str, users: Iterable[str], deadline: float) -> dict[str, str]:
        """The names of `users` known by `deadline` (time.monotonic()); the others are left out."""
        ids = [user for user in dict.fromkeys(users) if PERSON_ID.match(user)]
        if not ids:
            return {}
        cached = dict(
            zip(ids, self.redis.mget([user_name_cache_key(team, user) for user in ids]), strict=True)
        )
        found = {user: text(name) for user, name in cached.items() if name}
        missing = [user for user in ids if cached[user] is None][:MAX_LOOKUPS]
        if missing and time.monotonic() < deadline:
            found.update(self._look_up(team, missing, deadline))
        return found

    def _look_up(self, team: str, users: list[str], deadline: float) -> dict[str, str]:
        with ThreadPoolExecutor(max_workers=min(PARALLEL_LOOKUPS, len(users))) as pool:
            asked = {user: pool.submit(self._ask, team, user, deadline) for user in users}
        return {user: name for user, future in asked.items() if (name := future.result())}

    def _ask(self, team: str, user: str, deadline: float) -> str:
        if time.monotonic() >= deadline:
            return ""
        try:
            info = self.client.users_info(user=user).get("user") or {}
        except SlackApiError as error:
            log.info("no name for %s of %s: %s", user, team, error.response.get("error"))
            return ""
        except OSError as error:  # a timeout or a dropped connection: named next time
            log.info("no name for %s of %s: %s", user, team, type(error).__name__)
            return ""
        remember_name(self.redis, team, user, info)
        return display_name(info)
