"""Registered Lua scripts, cached per Redis client so each script's SHA is computed once."""

from __future__ import annotations

from typing import Any

from redis import Redis
from redis.asyncio import Redis as AsyncRedis

_scripts: dict[tuple[int, str], Any] = {}


def lua(redis: Redis | AsyncRedis, source: str) -> Any:
    """`source` registered on `redis`; on an asyncio client, calling it gives an awaitable."""
    cache_key = (id(redis), source)
    script = _scripts.get(cache_key)
    if script is None:
        script = _scripts[cache_key] = redis.register_script(source)
    return script


_DELETE_IF_HOLDS = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def delete_if_holds(redis: Redis, key: str, token: str) -> bool:
    """Delete `key` only while it holds `token`, in one step: a GET then a DEL could delete what
    another holder set in between (a lock or lease of ours that expired and was taken again)."""
    return bool(lua(redis, _DELETE_IF_HOLDS)(keys=[key], args=[token]))
