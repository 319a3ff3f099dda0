"""A cancel reaches the running turn it is for, pushed (docs/turn-worker.md 2.4).

`jobs.control.cancel` sets the session's `cancel` flag (the durable record) and publishes the
session key on `CANCELS_CHANNEL`. Each event loop that runs turns has one `CancelListener`: a
task subscribed to that channel on its own asyncio connection, which stops the turn of a key
it runs (`Loop.cancel`) as the message arrives and its flag is read. Nothing polls.

A message only says "look at the flag": pub/sub spans every database of the server, so another
deployment on the next database may publish the same session key, and only a flag set in this
one's database stops a turn. Pub/sub forgets what was published while nobody listened, so the
flag covers the gaps: a turn that starts listening reads its own flag once it is heard, and after
every (re)subscription the listener reads the flags of every turn it runs. A cancel set before
either read is found by it; one set after is heard.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Callable

from redis import Redis
from redis.exceptions import RedisError

from jobs.aio_redis import aio_twin
from jobs.keys import CANCELS_CHANNEL, SessionKey, cancel_key
from jobs.redis_text import text

log = logging.getLogger(__name__)

RESUBSCRIBE_S = (0.1, 0.5, 1.0, 2.0)  # waits between attempts after the connection is lost
Stop = Callable[[], None]


class CancelListener:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self._turns: dict[str, Stop] = {}
        self._task: asyncio.Task[None] | None = None
        self.subscribed = asyncio.Event()

    @contextlib.asynccontextmanager
    async def hearing(self, key: SessionKey, stop: Stop) -> AsyncIterator[None]:
        """While the block runs, a cancel of `key` calls `stop()` (on this loop, at most once)."""
        self._turns[str(key)] = _once(stop)
        self._ensure_listening()
        try:
            if self.subscribed.is_set():
                await self._stop_if_flagged([str(key)])
            yield
        finally:
            self._turns.pop(str(key), None)

    def _ensure_listening(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._listen(), name="cancel listener")

    async def _listen(self) -> None:
        attempt = 0
        while True:
            try:
                await self._subscribed_session()
            except (RedisError, OSError):
                self.subscribed.clear()
                wait = RESUBSCRIBE_S[min(attempt, len(RESUBSCRIBE_S) - 1)]
                attempt += 1
                log.warning("the cancel listener lost Redis; subscribing again in %.1f s", wait)
                await asyncio.sleep(wait)
            else:
                attempt = 0

    async def _subscribed_session(self) -> None:
        pubsub = aio_twin(self.redis).pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(CANCELS_CHANNEL)
            self.subscribed.set()
            await self._stop_if_flagged(list(self._turns))
            async for message in pubsub.listen():
                key = text(message["data"])
                if key in self._turns:
                    await self._stop_if_flagged([key])
        finally:
            self.subscribed.clear()
            with contextlib.suppress(RedisError, OSError):
                await pubsub.aclose()

    async def _stop_if_flagged(self, keys: list[str]) -> None:
        if not keys:
            return
        aio = aio_twin(self.redis)
        async with aio.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.exists(cancel_key(SessionKey.parse(key)))
            flagged = await pipe.execute()
        for key, is_set in zip(keys, flagged, strict=True):
            stop = self._turns.get(key)
            if is_set and stop is not None:
                log.info("cancel of %s found: stopping its turn", key)
                stop()


_listeners: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, CancelListener] = weakref.WeakKeyDictionary()


def cancel_listener(redis: Redis) -> CancelListener:
    """The running loop's listener (one per loop, so one per turn process)."""
    loop = asyncio.get_running_loop()
    listener = _listeners.get(loop)
    if listener is None:
        listener = _listeners[loop] = CancelListener(redis)
    return listener


def _once(stop: Stop) -> Stop:
    done = False

    def once() -> None:
        nonlocal done
        if not done:
            done = True
            stop()

    return once
