"""How a running turn is stopped from outside: a Stop click, or its time limit.

Both set the turn's `CancelSignal`, which its tools hear at once. A Stop click reaches the
loop through `TurnSink.cancel_requested`, polled every `CANCEL_POLL_S`; the time limit is a
timer on the event loop. Whatever the loop awaits then (a model call, a summary) is abandoned,
and the turn ends with one `turn.cancel` record.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from typing import TypeVar

from agent.loop.ports import TurnOutcome, TurnSink
from agent.tools.cancel import CancelSignal
from agent.tools.texts import CancelReason
from agent.wire import TurnCancel

log = logging.getLogger(__name__)
T = TypeVar("T")

CANCEL_POLL_S = 0.25  # a Stop click reaches running tools within this (plus the 2 s grace)
TIMED_OUT_TEXT = "Turn hit its time limit of {seconds} s and was stopped."


class TurnStopped(Exception):
    """The turn cannot go on (cancel, deadline, failure); carries the outcome to return."""

    def __init__(self, outcome: TurnOutcome) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


class TurnStopping:
    """The cancel signal of one turn, and what sets it: the Stop poll and the deadline."""

    def __init__(self, sink: TurnSink, deadline_s: float | None) -> None:
        self.sink = sink
        self.deadline_s = deadline_s
        self.signal = CancelSignal()
        self.timed_out = False

    def stop_if_cancelled(self, turn_id: str, steps: int) -> None:
        """Record the cancel and raise `TurnStopped` when the signal is set."""
        if not self.signal.cancelled:
            return
        reason: CancelReason = self.signal.reason or "aborted"
        self.sink.record(TurnCancel(turn_id=turn_id, target="active", reason=reason), f"{turn_id}:cancel")
        if self.timed_out:
            seconds = int(self.deadline_s or 0)
            raise TurnStopped(
                TurnOutcome("timed_out", error=TIMED_OUT_TEXT.format(seconds=seconds), steps=steps)
            )
        raise TurnStopped(TurnOutcome("cancelled", steps=steps))

    async def cancellable(self, work: Awaitable[T], turn_id: str, step: int) -> T:
        """Await `work`; when the signal is set first, stop it and stop the turn."""
        task = asyncio.ensure_future(work)
        stop = asyncio.ensure_future(self.signal.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        self.stop_if_cancelled(turn_id, step)
        raise AssertionError("unreachable: the signal was set")

    async def watch(self) -> None:
        """Poll for a Stop click until the signal is set."""
        while not self.signal.cancelled:
            try:
                if self.sink.cancel_requested():
                    self.signal.cancel("user_cancelled")
                    return
            except Exception:  # a Redis blip must not kill the turn; the next poll retries
                log.warning("could not read the cancel flag", exc_info=True)
            await asyncio.sleep(CANCEL_POLL_S)

    def start_deadline(self) -> asyncio.TimerHandle | None:
        if self.deadline_s is None:
            return None

        def expire() -> None:
            self.timed_out = True
            self.signal.cancel("aborted")

        return asyncio.get_running_loop().call_later(self.deadline_s, expire)
