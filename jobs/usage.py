"""What the model cost: each step's usage summed per turn, per session, per channel and per
person per UTC day, in Redis; prices (LLM_PRICE_*) turn tokens into dollars.

A step's usage is on its `step.begin` record (agent/loop/turn_loop.py), written when the model
answered, and a compaction's (its summary request) on its `context.apply_compaction`; the turn's
sink, or the manual compaction job, hands it here (`UsageMeter.count`), which adds it everywhere
in one script, once whatever retries the record. The person charged is the one whose message
the turn answers (else the session's owner); a sub-agent's steps also count in its root
session, so the thread's status shows everything its request cost. The daily hashes are what the
budgets (BUDGET_TOKENS_PER_*_PER_DAY, jobs/quotas.py, checked by jobs/input.lua) read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from redis import Redis
from redis.asyncio import Redis as AsyncRedis

from agent.messages import Message
from agent.wire import AppendLoopEvent, ApplyCompaction, StepBegin
from jobs.keys import PREFIX, SessionKey, daily_usage_key, turn_usage_key, usage_key
from jobs.lua import lua
from jobs.redis_text import text
from jobs.settings import Settings

DAY_TTL_S = 8 * 24 * 3600  # "what did this cost this week" needs seven full days and today
TURN_TTL_S = 7 * 24 * 3600  # like the other per-id session keys: long past any turn's end
PER_MILLION = 1_000_000

# KEYS[1] the turn's hash (its `step:<uuid>` field marks the step counted), then every hash the
# step adds to (the daily ones outside the session's hash slot: like jobs/input.lua, this script
# needs one primary: Cluster is not supported). ARGV: step uuid, input, output, cached, estimated
# (0/1), then a TTL per KEY (0: none). Returns 1 when counted, 0 when it had been counted already.
_COUNT = """
if redis.call('HSETNX', KEYS[1], 'step:' .. ARGV[1], 1) == 0 then return 0 end
local input, output = tonumber(ARGV[2]), tonumber(ARGV[3])
for i, key in ipairs(KEYS) do
  redis.call('HINCRBY', key, 'input', input)
  redis.call('HINCRBY', key, 'output', output)
  redis.call('HINCRBY', key, 'cached', ARGV[4])
  redis.call('HINCRBY', key, 'tokens', input + output)
  redis.call('HINCRBY', key, 'steps', 1)
  redis.call('HINCRBY', key, 'estimated', ARGV[5])
  local ttl = tonumber(ARGV[5 + i])
  if ttl > 0 then redis.call('EXPIRE', key, ttl) end
end
return 1
"""


@dataclass(frozen=True)
class Prices:
    """US dollars per million tokens."""

    input: float
    output: float
    cached: float


def prices(settings: Settings) -> Prices | None:
    """The configured prices, or None when tokens cannot be priced (input or output unset)."""
    if settings.LLM_PRICE_INPUT is None or settings.LLM_PRICE_OUTPUT is None:
        return None
    cached = settings.LLM_PRICE_CACHED if settings.LLM_PRICE_CACHED is not None else settings.LLM_PRICE_INPUT
    return Prices(settings.LLM_PRICE_INPUT, settings.LLM_PRICE_OUTPUT, cached)


@dataclass(frozen=True)
class Totals:
    input: int = 0
    output: int = 0
    cached: int = 0  # the part of `input` the provider served from its cache
    steps: int = 0
    estimated: int = 0  # steps whose provider sent no usage: our estimate stands in

    @property
    def tokens(self) -> int:
        return self.input + self.output

    @classmethod
    def from_hash(cls, raw: Mapping[Any, Any]) -> Totals:
        fields = {text(name): int(value) for name, value in raw.items() if not text(name).startswith("step:")}
        return cls(
            **{name: fields.get(name, 0) for name in ("input", "output", "cached", "steps", "estimated")}
        )

    def cost(self, priced: Prices) -> float:
        uncached = max(0, self.input - self.cached)
        dollars = uncached * priced.input + self.cached * priced.cached + self.output * priced.output
        return dollars / PER_MILLION

    def describe(self, priced: Prices | None) -> str:
        """One line for people: tokens, then dollars when priced, and how much is estimated."""
        line = f"{self.tokens:,} tokens ({self.input:,} in"
        line += f", {self.cached:,} of them cached" if self.cached else ""
        line += f"; {self.output:,} out)"
        if priced is not None:
            line += f", about ${self.cost(priced):,.4f}"
        if self.estimated:
            line += (
                f" (estimated for {self.estimated} of {self.steps} model calls: the provider sent no usage)"
            )
        return line


def utc_day(now: dt.datetime | None = None) -> str:
    return (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d")


class UsageMeter:
    """Counts the usage of a turn's steps in `session` (and `root`, for a sub-agent), charged to
    `person` in the session's channel."""

    def __init__(self, redis: Redis, session: SessionKey, turn_id: str, person: str | None,
                 root: SessionKey | None = None) -> None:  # fmt: skip
        self.redis = redis
        self.session = session
        self.turn_id = turn_id
        self.person = person
        self.root = root if root != session else None

    def count(self, step_uuid: str, usage: Mapping[str, Any], day: str | None = None) -> bool:
        """Add one step's usage everywhere; False when it had been counted already."""
        keys, args = self._counting(step_uuid, usage, day or utc_day())
        return bool(lua(self.redis, _COUNT)(keys=keys, args=args))

    async def count_on(self, aio: AsyncRedis, step_uuid: str, usage: Mapping[str, Any]) -> bool:
        """`count` through the asyncio client `aio` (jobs.aio_redis)."""
        keys, args = self._counting(step_uuid, usage, utc_day())
        return bool(await lua(aio, _COUNT)(keys=keys, args=args))

    def _counting(self, step_uuid: str, usage: Mapping[str, Any], day: str) -> tuple[list[str], list[Any]]:
        keyed = [(turn_usage_key(self.session, self.turn_id), TURN_TTL_S), (usage_key(self.session), 0)]
        if self.root is not None:
            keyed.append((usage_key(self.root), 0))
        keyed.append((daily_usage_key(day, self.session.team, "channel", self.session.channel), DAY_TTL_S))
        if self.person:
            keyed.append((daily_usage_key(day, self.session.team, "user", self.person), DAY_TTL_S))
        numbers = [_tokens(usage, name) for name in ("input_tokens", "output_tokens", "cached_tokens")]
        args = [step_uuid, *numbers, int(bool(usage.get("estimated"))), *(ttl for _, ttl in keyed)]
        return [key for key, _ in keyed], args


def usage_to_count(record: BaseModel, once_key: str) -> tuple[str, Mapping[str, Any]] | None:
    """The model usage a wire record carries and what it is counted under (once): a step.begin
    under its step, a compaction (its summary request) under the record's idempotency key."""
    if isinstance(record, AppendLoopEvent) and isinstance(record.event, StepBegin) and record.event.usage:
        return record.event.uuid, record.event.usage
    if isinstance(record, ApplyCompaction) and record.usage:
        return f"compaction:{once_key}", record.usage
    return None


def charged_person(history: list[Message], owner: str | None) -> str | None:
    """Who a turn's usage is charged to: the author of the latest person's message in the
    history (the one the turn answers), else the session's owner (a sub-agent's task)."""
    for message in reversed(history):
        origin = message.origin
        if origin is not None and origin.kind == "user":
            person = (origin.model_extra or {}).get("user")
            if isinstance(person, str) and person:
                return person
    return owner


def _tokens(usage: Mapping[str, Any], name: str) -> int:
    value = usage.get(name)
    return value if isinstance(value, int) and value > 0 else 0


def session_usage(redis: Redis, key: SessionKey) -> Totals:
    return Totals.from_hash(redis.hgetall(usage_key(key)))


def turn_usage(redis: Redis, key: SessionKey, turn_id: str) -> Totals:
    return Totals.from_hash(redis.hgetall(turn_usage_key(key, turn_id)))


def daily_usage(redis: Redis, team: str, kind: str, who: str, day: str | None = None) -> Totals:
    return Totals.from_hash(redis.hgetall(daily_usage_key(day or utc_day(), team, kind, who)))


def usage_of_day(redis: Redis, day: str | None = None) -> dict[tuple[str, str, str], Totals]:
    """Every channel's and person's usage on `day` (today): (team, kind, id) → totals. For
    `threadline status`; one SCAN over the day's keys."""
    prefix = f"{PREFIX}:usage:{day or utc_day()}:"
    found: dict[tuple[str, str, str], Totals] = {}
    for name in redis.scan_iter(match=prefix + "*", count=1000):
        team, kind, who = text(name).removeprefix(prefix).split(":", 2)
        found[(team, kind, who)] = Totals.from_hash(redis.hgetall(name))
    return found
