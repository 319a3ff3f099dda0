"""About one post per second per channel, across every worker (Slack's posting limit).

A generic cell-rate limiter in Redis: each caller reserves the next free slot of the channel
and sleeps until it, so posts from several workers to one channel queue up instead of
drawing 429s. A short burst is allowed, as Slack allows one.
"""

from __future__ import annotations

import time

from redis import Redis

from jobs.keys import pace_key
from jobs.lua import lua

POST_INTERVAL_MS = 1000  # Slack: "1 message per second per channel", short bursts tolerated
BURST_MS = 2000  # up to three posts back to back before the pace applies

# KEYS[1]: the channel's theoretical arrival time (ms). Returns how long the caller must wait.
_RESERVE = """
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local wait = tat - tonumber(ARGV[2]) - now
if wait < 0 then wait = 0 end
local next_tat = tat + tonumber(ARGV[1])
redis.call('SET', KEYS[1], next_tat, 'PX', next_tat - now + 1000)
return wait
"""


def reserve_post(redis: Redis, team: str, channel: str) -> float:
    """Reserve a posting slot; returns the seconds to wait before using it."""
    wait_ms = lua(redis, _RESERVE)(keys=[pace_key(team, channel)], args=[POST_INTERVAL_MS, BURST_MS])
    return int(wait_ms) / 1000


def wait_for_post_slot(redis: Redis, team: str, channel: str) -> None:
    wait = reserve_post(redis, team, channel)
    if wait > 0:
        time.sleep(wait)
