"""Quotas: how much one person, channel, bot or prompt may make the agent do.

Each is a setting (jobs.settings, `QUOTA_*`) with a default; 0 turns a rate off. The rates of
Slack input (per person and per channel per minute, per thread per hour for allowed bots) are
fixed-window counters, `tl:quota:<team>:…`, checked and counted by jobs/input.lua in the same
round trip that records the input, so the mention's ack stays one Redis call. A refused
message is not recorded at all: no input, no turn, no model request; its dedupe keys are
claimed, so Slack's retry of it is a duplicate rather than a second refusal. Only the first
refusal of a quota's window is told (an ephemeral line, posted before the ack): a flood of
refused messages then costs Redis one call each and Slack nothing.

One quota is not a rate: the sessions a person has working at once (`working_quota`). It is
checked, in the same script, only for a message that would start a turn, and told every time
(the per-person rate already bounds how often). So are the daily token budgets
(`budget_quotas`, BUDGET_TOKENS_PER_*_PER_DAY, off by default): once a person's or a channel's
turns have used that many tokens this UTC day (jobs.usage counts them), a message that would
start a turn is not read; replies to a turn already going on still reach it, and a running turn
is never cut short, so a day can end a little over its budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from redis import Redis

from jobs.keys import (
    MetaField,
    SessionKey,
    daily_usage_key,
    quota_key,
    session_key_around,
    working_sessions_key,
)
from jobs.lua import lua
from jobs.session.state import WORKING_STATES
from jobs.settings import Settings
from jobs.usage import utc_day

MINUTE_S = 60
HOUR_S = 3600
WORKING_TTL_S = 30 * 24 * HOUR_S  # the working set outlives any parked turn someone still cares about


@dataclass(frozen=True)
class Quota:
    """At most `limit` counted events per `window_s`, counted in `key`; `refusal` says so."""

    key: str
    limit: int
    window_s: int
    refusal: str


@dataclass(frozen=True)
class Refused:
    """The input was over `quota`; `tell`: the first refusal of its window, to be told."""

    quota: Quota
    tell: bool


def input_quotas(settings: Settings, key: SessionKey, user: str, *, by_bot: bool) -> list[Quota]:
    """The quotas one Slack message to the agent counts against (those turned on)."""
    quotas = [
        Quota(
            quota_key(key.team, "user", user),
            settings.QUOTA_MENTIONS_PER_USER_PER_MINUTE,
            MINUTE_S,
            f"Slow down: you have sent the agent {settings.QUOTA_MENTIONS_PER_USER_PER_MINUTE} messages in"
            " the last minute, the most it takes from one person. This one was not read; send it again"
            " in a minute.",
        ),
        Quota(
            quota_key(key.team, "channel", key.channel),
            settings.QUOTA_MENTIONS_PER_CHANNEL_PER_MINUTE,
            MINUTE_S,
            f"The agent has taken {settings.QUOTA_MENTIONS_PER_CHANNEL_PER_MINUTE} messages in this channel"
            " in the last minute, the most it takes from one channel. This one was not read; send it"
            " again in a minute.",
        ),
    ]
    if by_bot:
        quotas.append(
            Quota(
                quota_key(key.team, "bot", key.channel, key.thread_ts),
                settings.QUOTA_BOT_TURNS_PER_THREAD_PER_HOUR,
                HOUR_S,
                f"This thread has had {settings.QUOTA_BOT_TURNS_PER_THREAD_PER_HOUR} messages from bots"
                " in the last hour, the most it takes (a loop breaker); this one was not read.",
            )
        )
    return [quota for quota in quotas if quota.limit > 0]


def working_quota(settings: Settings, team: str, user: str) -> Quota | None:
    """At most QUOTA_SESSIONS_PER_USER sessions working at once that `user`'s messages started;
    `window_s` is how long the set of them is kept after the last one started. None: no limit."""
    limit = settings.QUOTA_SESSIONS_PER_USER
    if limit == 0:
        return None
    return Quota(
        working_sessions_key(team, user),
        limit,
        WORKING_TTL_S,
        f"You already have {sessions_working(limit)}. This one was not read; send it again when one"
        " of them has ended, or stop one with `!stop` in its thread.",
    )


def sessions_working(limit: int) -> str:
    """What a refusal by the sessions-at-once quota says the person has (a message's or a resume's)."""
    sessions = "1 session" if limit == 1 else f"{limit} sessions"
    return (
        f"{sessions} working (running, queued or waiting for an approval or sub-agents), the most"
        " one person may have at once"
    )


# Lua shared by jobs/input.lua and _CLAIM_WORKING: how many sessions of the set at `working_key`,
# `except` aside, are still working, forgetting those that ended. It reads the locals WORKING
# (the working states as a set), STATE (the meta's state field), META_BEFORE and META_AFTER
# (what comes before and after a session in its meta key), which each script defines.
COUNT_WORKING = """
local function count_working(working_key, except)
  local working = 0
  for _, other in ipairs(redis.call('ZRANGE', working_key, 0, -1)) do
    if other ~= except then
      if WORKING[redis.call('HGET', META_BEFORE .. other .. META_AFTER, STATE) or 'idle'] then
        working = working + 1
      else
        redis.call('ZREM', working_key, other)
      end
    end
  end
  return working
end
"""

# KEYS[1]: the person's working set. ARGV: limit, ttl_s, now_ms, the session, the meta's state
# field, what comes before and after a session in its meta key, then the working states. Under
# the limit, adds the session.
_CLAIM_WORKING = (
    """
local limit, session = tonumber(ARGV[1]), ARGV[4]
local STATE, META_BEFORE, META_AFTER = ARGV[5], ARGV[6], ARGV[7]
local WORKING = {}
for i = 8, #ARGV do WORKING[ARGV[i]] = true end
"""
    + COUNT_WORKING
    + """
if count_working(KEYS[1], session) >= limit then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], session)
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""
)


def claim_working(redis: Redis, working: Quota, key: SessionKey, now_ms: int) -> bool:
    """Count `key` among the sessions `working`'s person has working, unless that many already
    are: for what starts a turn outside jobs/input.lua (resume)."""
    before, after = session_key_around("meta")
    args = [working.limit, working.window_s, now_ms, str(key), MetaField.STATE, before, after]
    return bool(lua(redis, _CLAIM_WORKING)(keys=[working.key], args=[*args, *WORKING_STATES]))


def budget_quotas(settings: Settings, key: SessionKey, user: str, day: str) -> list[Quota]:
    """The daily token budgets (those turned on) a message that would start a turn meets, read
    from `day`'s usage hashes; `window_s` is unused (a day's hash is a new key)."""
    budgets = [
        Quota(
            daily_usage_key(day, key.team, "user", user),
            settings.BUDGET_TOKENS_PER_USER_PER_DAY,
            0,
            f"You have used today's model budget ({settings.BUDGET_TOKENS_PER_USER_PER_DAY:,} tokens a"
            " person a day): nothing you ask starts a turn until it renews at 00:00 UTC (this was not"
            " read). Replies to a turn already going on still reach it.",
        ),
        Quota(
            daily_usage_key(day, key.team, "channel", key.channel),
            settings.BUDGET_TOKENS_PER_CHANNEL_PER_DAY,
            0,
            f"This channel has used today's model budget ({settings.BUDGET_TOKENS_PER_CHANNEL_PER_DAY:,}"
            " tokens a day): nothing starts a turn here until it renews at 00:00 UTC (this was not"
            " read). Replies to a turn already going on still reach it.",
        ),
    ]
    return [budget for budget in budgets if budget.limit > 0]


def spent_budget(redis: Redis, budgets: Sequence[Quota]) -> Quota | None:
    """The first of `budgets` spent today: for what starts a turn outside jobs/input.lua (resume)."""
    for budget in budgets:
        if int(redis.hget(budget.key, "tokens") or 0) >= budget.limit:
            return budget
    return None


class InputLimits(TypedDict):
    """What jobs.input.record_input checks a person's input against (its keyword arguments)."""

    quotas: list[Quota]
    working: Quota | None
    budgets: list[Quota]


def input_limits(settings: Settings, key: SessionKey, user: str, *, by_bot: bool) -> InputLimits:
    """Every limit a person's input meets, a message or a skill alike: the rates, the sessions
    working at once, and today's budgets."""
    return InputLimits(
        quotas=input_quotas(settings, key, user, by_bot=by_bot),
        working=working_quota(settings, key.team, user),
        budgets=budget_quotas(settings, key, user, utc_day()),
    )
