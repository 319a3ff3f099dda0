"""A worker process's HTTP connections to the model provider, reused across steps.

An `httpx.AsyncClient` belongs to the event loop its connections were opened on, so the pool
keeps clients per endpoint (base URL, key, timeouts) for the loop the caller names as long-lived
(a worker's turn loop, jobs/turn/host.py) and hands out a one-off client, closed after the
call, anywhere else
(`asyncio.run` in a command or a test: its loop dies with the call). A client made before a fork
belongs to the parent: a child process starts its own.

On the long-lived loop a client carries at most `CALLS_PER_CLIENT` calls at once; a call goes to
the least busy client, and a new one is opened when each carries that many. httpcore walks
every connection of a client's pool on each request and each response's end, with two system
calls per idle connection: with one client for 200 turns that walk was a third of the turn
loop's samples (docs/turn-worker.md). A quiet worker still uses one client, so its steps share one connection.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager

import httpx

# Providers' load balancers keep an idle connection for 60 s or more (nginx 75 s, AWS ALB 60 s);
# a step's tools often run longer than httpx's default 5 s, so connections would be lost between
# steps. 30 s stays under every idle timeout we know, so we close before the server does.
KEEPALIVE_EXPIRY_S = 30.0
CALLS_PER_CLIENT = 4  # a client's pool stays this small (idle ones included), and its walk this short

ClientFactory = Callable[[httpx.Limits], httpx.AsyncClient]
LoopFinder = Callable[[], "asyncio.AbstractEventLoop | None"]

POOL_LIMITS = httpx.Limits(max_keepalive_connections=CALLS_PER_CLIENT, keepalive_expiry=KEEPALIVE_EXPIRY_S)


class ConnectionPool:
    """Clients for one provider endpoint: shared on the long-lived loop, one-off elsewhere."""

    def __init__(self, long_lived_loop: LoopFinder = lambda: None) -> None:
        self._long_lived_loop = long_lived_loop
        self._clients: dict[Hashable, list[_Shared]] = {}
        self._owner: tuple[int, asyncio.AbstractEventLoop] | None = None

    @asynccontextmanager
    async def client(self, endpoint: Hashable, make: ClientFactory) -> AsyncIterator[httpx.AsyncClient]:
        """A client for `endpoint` (whatever tells two configurations apart), made by `make`."""
        loop = asyncio.get_running_loop()
        if loop is not self._long_lived_loop():
            async with make(POOL_LIMITS) as one_off:
                yield one_off
            return
        shared = self._least_busy(loop, endpoint, make)
        shared.calls += 1
        try:
            yield shared.client
        finally:
            shared.calls -= 1

    def _least_busy(
        self, loop: asyncio.AbstractEventLoop, endpoint: Hashable, make: ClientFactory
    ) -> _Shared:
        owner = (os.getpid(), loop)
        if self._owner != owner:
            self._clients = {}  # another process's or loop's clients are left alone, never used
            self._owner = owner
        clients = self._clients.setdefault(endpoint, [])
        least = min(clients, key=lambda shared: shared.calls, default=None)
        if least is None or least.calls >= CALLS_PER_CLIENT:
            least = _Shared(make(POOL_LIMITS))
            clients.append(least)
        return least

    async def aclose(self) -> None:
        """Close the shared clients; the next call opens new ones. A stopping worker process
        need not: its exit closes the same sockets the same way (HTTP/1.1, and httpcore sends
        no TLS close_notify), with no await on the turn loop in its drain."""
        clients, self._clients, self._owner = self._clients, {}, None
        for shared in clients.values():
            for each in shared:
                await each.client.aclose()


class _Shared:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.calls = 0  # in flight now
