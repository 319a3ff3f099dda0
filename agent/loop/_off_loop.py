"""Work over a whole history, kept off the event loop when the history is long.

A worker runs many turns as tasks on one loop (jobs.turn.event_loop): projecting 10,000
messages from scratch takes ~100 ms and estimating their tokens ~20 ms, time in which every
other turn of the process would stand still. Short work stays inline: a thread costs more.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

INLINE_MAX_MESSAGES = 2_000


async def over_messages(count: int, work: Callable[[], T]) -> T:
    """`work()`, which goes through `count` messages: in a thread when there are many."""
    if count <= INLINE_MAX_MESSAGES:
        return work()
    return await asyncio.to_thread(work)
