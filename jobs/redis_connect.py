"""Every Redis client of every process, made in one place: one server, or the primary Sentinel names.

Without Sentinel, `REDIS_URL` is the server. With `REDIS_SENTINELS` and `REDIS_SENTINEL_SERVICE`,
a connection asks the sentinels for the current primary each time it opens, and redis-py drops a
connection that meets a dead primary or a demoted one (READONLY): the caller's retry opens it
again to the primary the sentinels name now, so web, the workers, RQ's own calls, `status` and
`doctor` follow a failover without a restart. `REDIS_URL` then gives only the database, the
credentials and TLS (`rediss://`); its host and port are not used.

Redis Cluster is not supported (docs/architecture.md, "Redis"): RQ does not run on one, and our
scripts touch keys of several sessions and RQ's at once.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from redis import BlockingConnectionPool, ConnectionPool, Redis
from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.sentinel import Sentinel

from jobs.settings import Settings

# A worker of 200 turns runs more Redis calls at once than redis-py's default pool of 100, which
# refuses the next one ("Too many connections"): a caller past this many waits for a connection
# (up to REDIS_POOL_WAIT_S), it does not fail. Connections are opened only as they are needed.
REDIS_MAX_CONNECTIONS = 512
REDIS_POOL_WAIT_S = 10
# Short timeouts: a Redis outage must surface as a clear error, not a hung request.
SOCKET_TIMEOUT_S = 5.0
CONNECT_TIMEOUT_S = 3.0
HEALTH_CHECK_S = 15  # a connection idle this long is PINGed before it is used again
SENTINEL_TIMEOUT_S = 1.0  # per sentinel asked; the next one is asked when one does not answer


@dataclass(frozen=True)
class RedisTarget:
    """Where a process's Redis is: `url`, or the primary `sentinels` name `service`."""

    url: str
    sentinels: tuple[tuple[str, int], ...] = ()
    service: str = ""
    sentinel_username: str | None = None
    sentinel_password: str | None = None

    @classmethod
    def of(cls, settings: Settings) -> RedisTarget:
        settings.require("REDIS_URL")
        if settings.sentinels:
            settings.require("REDIS_SENTINEL_SERVICE")
        return cls(
            settings.REDIS_URL or "",
            settings.sentinels,
            settings.REDIS_SENTINEL_SERVICE,
            settings.REDIS_SENTINEL_USERNAME,
            settings.REDIS_SENTINEL_PASSWORD,
        )

    def sentinel(self, timeout_s: float = SENTINEL_TIMEOUT_S) -> Sentinel:
        return Sentinel(self.sentinels, sentinel_kwargs=self.sentinel_kwargs(timeout_s))

    def sentinel_kwargs(self, timeout_s: float) -> dict[str, Any]:
        auth = {"username": self.sentinel_username, "password": self.sentinel_password}
        return {"socket_timeout": timeout_s, "socket_connect_timeout": timeout_s, **auth}

    def server_kwargs(self) -> dict[str, Any]:
        """What REDIS_URL says beyond its host and port: database, credentials, TLS."""
        parsed = urlparse(self.url)
        kwargs: dict[str, Any] = {"db": int(parsed.path.strip("/") or 0)}
        if parsed.username:
            kwargs["username"] = unquote(parsed.username)
        if parsed.password:
            kwargs["password"] = unquote(parsed.password)
        if parsed.scheme == "rediss":
            kwargs["ssl"] = True
        return kwargs


_targets: weakref.WeakKeyDictionary[ConnectionPool, RedisTarget] = weakref.WeakKeyDictionary()


def connect(
    target: RedisTarget,
    *,
    socket_timeout_s: float | None = SOCKET_TIMEOUT_S,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
) -> Redis:
    """A client of `target` (`socket_timeout_s=None` for a caller that blocks on purpose, as
    RQ's dequeue does for minutes)."""
    connection = {
        "socket_timeout": socket_timeout_s,
        "socket_connect_timeout": connect_timeout_s,
        "health_check_interval": HEALTH_CHECK_S,
    }
    if not target.sentinels:
        pool = BlockingConnectionPool.from_url(
            target.url, max_connections=REDIS_MAX_CONNECTIONS, timeout=REDIS_POOL_WAIT_S, **connection
        )
        client = Redis(connection_pool=pool)
    else:
        # redis-py's Sentinel pool does not wait for a free connection; its limit is as high.
        kwargs = {**target.server_kwargs(), **connection, "max_connections": REDIS_MAX_CONNECTIONS}
        sentinel = target.sentinel(min(connect_timeout_s, SENTINEL_TIMEOUT_S))
        client = sentinel.master_for(target.service, **kwargs)
    _targets[client.connection_pool] = target
    return client


def sentinel_target(redis: Redis) -> RedisTarget | None:
    """The Sentinel target `redis` was made for by `connect`, if it was."""
    target = _targets.get(redis.connection_pool)
    return target if target is not None and target.sentinels else None


def connect_async(target: RedisTarget, like: Redis) -> AsyncRedis:
    """An asyncio client of Sentinel `target`'s primary, with `like`'s timeouts and pool size."""
    made = like.connection_pool.connection_kwargs
    kwargs: dict[str, Any] = {name: made.get(name) for name in ("socket_timeout", "socket_connect_timeout")}
    kwargs.update(target.server_kwargs(), max_connections=REDIS_MAX_CONNECTIONS)
    sentinel = AsyncSentinel(target.sentinels, sentinel_kwargs=target.sentinel_kwargs(SENTINEL_TIMEOUT_S))
    client: AsyncRedis = sentinel.master_for(target.service, **kwargs)
    return client
