"""What a turn shows in its thread (progress card, live steps, compaction notices), published off
the event loop its turns share, one publication at a time and in the order they were asked for.

The reporter and the step text hear the loop's events on the loop and must not do I/O there
(agent.loop.ports); they change their in-memory view and ask the turn's `Publisher` to publish
it. A publication that reads the view when it runs may be asked for again before it ran: it
runs once (`key`), showing the newest state, so a burst of tool events costs one card. A slow
Redis delays this turn's card, never its steps or another turn. Off the loop (a turn's
synchronous start and end), a publication runs at once, after those already waiting
(`flush` first).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Hashable

from agent.offload import in_thread

log = logging.getLogger(__name__)

Publication = Callable[[], None]


class Publisher:
    def __init__(self) -> None:
        self._waiting: deque[tuple[Hashable | None, Publication]] = deque()
        self._task: asyncio.Task[None] | None = None

    def later(self, publication: Publication, key: Hashable | None = None) -> None:
        """Publish soon; with `key`, once for all the asks of that key still waiting."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # off the loop: nothing to keep free
            publication()
            return
        if key is not None and any(waiting == key for waiting, _ in self._waiting):
            return
        self._waiting.append((key, publication))
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._publish_waiting(), name="publisher")

    async def flush(self) -> None:
        """Return once everything asked for so far is published (or failed, logged)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def _publish_waiting(self) -> None:
        while self._waiting:
            _, publication = self._waiting.popleft()
            try:
                await in_thread(publication)
            except Exception:  # the thread's view lags; the turn and its record go on
                log.warning("could not publish the turn's progress", exc_info=True)
