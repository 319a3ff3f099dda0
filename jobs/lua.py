"""Registered Lua scripts, cached per Redis client so each script's SHA is computed once."""

from __future__ import annotations

from typing import Any

from redis import Redis

_scripts: dict[tuple[int, str], Any] = {}


def lua(redis: Redis, source: str) -> Any:
    cache_key = (id(redis), source)
    script = _scripts.get(cache_key)
    if script is None:
        script = _scripts[cache_key] = redis.register_script(source)
    return script
