"""The workspace write lock in Redis: sessions sharing a workspace never write over each other.

A parent and its sub-agents run in different workers on one workspace. A call that writes
(see agent.tools.write_lock) acquires this lock for its writing entries before it runs and
releases it after: one Lua script checks the entries against every current holder with the
scheduler's conflict rule (context-core.md §4.4: `all` conflicts with everything; two file entries
conflict when their paths overlap, a recursive entry covering the paths under it) and adds
the holder only if nothing conflicts. A waiting call polls; a holder renews its lease while
it runs, so a dead worker's lock lapses after `HOLD_TTL_MS`. It runs on the turns' event loop,
so it talks to Redis through the asyncio client (jobs.aio_redis).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from redis import Redis

from agent.tools.accesses import Access, AllAccess
from jobs.aio_redis import aio_twin
from jobs.keys import workspace_writers_key
from jobs.lua import lua
from jobs.redis_text import text

HOLD_TTL_MS = 30_000  # a holder whose worker died frees the workspace after this
RENEW_EVERY_S = HOLD_TTL_MS / 3000  # three renewals per TTL: one slow Redis call is survivable
POLL_S = 0.05  # how soon a waiting write notices that the conflicting one finished

# Entries are "*" (all), "f:<path>" (one file) or "r:<path>" (a tree); paths are normalised.
_ACQUIRE = """
local function overlaps(a, b)
  if a == '*' or b == '*' then return true end
  local pa, pb = string.sub(a, 3), string.sub(b, 3)
  if pa == pb then return true end
  if string.sub(a, 1, 1) == 'r' and string.sub(pb, 1, #pa + 1) == pa .. '/' then return true end
  if string.sub(b, 1, 1) == 'r' and string.sub(pa, 1, #pb + 1) == pb .. '/' then return true end
  return false
end
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local holders = redis.call('HGETALL', KEYS[1])
for i = 1, #holders, 2 do
  local value = holders[i + 1]
  local cut = string.find(value, '\\n', 1, true)
  if tonumber(string.sub(value, 1, cut - 1)) < now_ms then
    redis.call('HDEL', KEYS[1], holders[i])
  elseif holders[i] ~= ARGV[1] then
    for held in string.gmatch(string.sub(value, cut + 1), '[^\\n]+') do
      for j = 3, #ARGV do
        if overlaps(held, ARGV[j]) then return 0 end
      end
    end
  end
end
redis.call('HSET', KEYS[1], ARGV[1], (now_ms + tonumber(ARGV[2])) .. '\\n' .. table.concat(ARGV, '\\n', 3))
return 1
"""

_RENEW = """
local value = redis.call('HGET', KEYS[1], ARGV[1])
if not value then return 0 end
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local cut = string.find(value, '\\n', 1, true)
redis.call('HSET', KEYS[1], ARGV[1], (now_ms + tonumber(ARGV[2])) .. string.sub(value, cut))
return 1
"""


def lock_entries(writes: Sequence[Access]) -> list[str]:
    entries = []
    for access in writes:
        if isinstance(access, AllAccess):
            return ["*"]
        entries.append(f"{'r' if access.recursive else 'f'}:{access.key}")
    return entries


class RedisWriteLock:
    """The `WriteLock` of one workspace, shared by every session whose workspace it is."""

    def __init__(self, redis: Redis, workspace: Path) -> None:
        self.redis = redis
        digest = hashlib.sha1(str(workspace).encode()).hexdigest()[:16]
        self.key = workspace_writers_key(digest)

    @contextlib.asynccontextmanager
    async def hold(self, writes: Sequence[Access]) -> AsyncIterator[None]:
        holder = uuid.uuid4().hex
        entries = lock_entries(writes)
        if not entries:
            yield
            return
        while not await self._try(holder, entries):
            await asyncio.sleep(POLL_S)
        renewer = asyncio.ensure_future(self._renew(holder))
        try:
            yield
        finally:
            renewer.cancel()
            await aio_twin(self.redis).hdel(self.key, holder)

    def holders(self) -> dict[str, list[str]]:
        raw = self.redis.hgetall(self.key)
        return {text(k): text(v).split("\n")[1:] for k, v in raw.items()}

    async def _try(self, holder: str, entries: list[str]) -> bool:
        acquire = lua(aio_twin(self.redis), _ACQUIRE)
        return bool(await acquire(keys=[self.key], args=[holder, HOLD_TTL_MS, *entries]))

    async def _renew(self, holder: str) -> None:
        while True:
            await asyncio.sleep(RENEW_EVERY_S)
            with contextlib.suppress(Exception):  # a Redis blip: the next renewal retries
                await lua(aio_twin(self.redis), _RENEW)(keys=[self.key], args=[holder, HOLD_TTL_MS])
