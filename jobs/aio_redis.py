"""The asyncio twin of a Redis client: what a turn awaits on its event loop (docs/turn-worker.md 2.3).

A turn's per-step writes (the wire, the inbox, usage), the lease keeper and the cancel listener
talk to Redis without blocking the loop every turn of the process shares. redis.asyncio's
connections belong to the loop that made them, so there is one twin per (loop, client); it
reaches the same server and database (or the same Sentinels' primary), with the same timeouts,
as the synchronous client it is made from, which is what every store of ours already holds.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from redis import Redis
from redis.asyncio import BlockingConnectionPool
from redis.asyncio import Redis as AsyncRedis
from redis.connection import SSLConnection, UnixDomainSocketConnection

from jobs.redis_connect import connect_async, sentinel_target

POOL_WAIT_S = 10  # for a client whose own pool does not say how long to wait

_twins: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, AsyncRedis]] = (
    weakref.WeakKeyDictionary()
)


def aio_twin(redis: Redis) -> AsyncRedis:
    """`redis`'s twin on the running loop (made on first use)."""
    loop = asyncio.get_running_loop()
    twins = _twins.setdefault(loop, {})
    twin = twins.get(id(redis))
    if twin is None:
        sentinel = sentinel_target(redis)
        if sentinel is not None:
            twin = twins[id(redis)] = connect_async(sentinel, redis)
        else:
            twin = twins[id(redis)] = AsyncRedis(connection_pool=_waiting_pool(redis))
    return twin


def _waiting_pool(redis: Redis) -> BlockingConnectionPool:
    """A pool as large as `redis`'s, where a task past its size waits for a connection rather
    than failing (redis.asyncio's default pool refuses the 101st: a worker of 200 turns gets there)."""
    made = AsyncRedis(**_same_server(redis)).connection_pool  # the connection class and its arguments
    return BlockingConnectionPool(
        max_connections=max(redis.connection_pool.max_connections, made.max_connections),
        timeout=getattr(redis.connection_pool, "timeout", None) or POOL_WAIT_S,
        connection_class=made.connection_class,
        **made.connection_kwargs,
    )


def _same_server(redis: Redis) -> dict[str, Any]:
    pool = redis.connection_pool
    kwargs = {name: value for name, value in pool.connection_kwargs.items() if name in _SHARED}
    if issubclass(pool.connection_class, UnixDomainSocketConnection):
        kwargs["unix_socket_path"] = kwargs.pop("path")
    elif issubclass(pool.connection_class, SSLConnection):
        kwargs["ssl"] = True
    return kwargs


# What says which server, as whom, and how patiently; the sync pool also keeps its own internals.
_SHARED = frozenset(
    {"host", "port", "path", "db", "username", "password", "client_name", "socket_timeout",
     "socket_connect_timeout", "socket_keepalive", "health_check_interval", "ssl_keyfile",
     "ssl_certfile", "ssl_cert_reqs", "ssl_ca_certs", "ssl_check_hostname"}
)  # fmt: skip
