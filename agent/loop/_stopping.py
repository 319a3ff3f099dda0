"""How a running turn is stopped from outside: a Stop click, its time limit, or a restart.

A Stop click and the time limit set the turn's `CancelSignal`, which its tools hear at once. A
Stop click is pushed to the loop by its caller (`Loop.cancel`, on the loop's thread; nothing
polls); the time limit is a timer on the event loop. Whatever the loop awaits then (a model call, a
summary) is abandoned, and the turn ends with one `turn.cancel` record.

A restart (`drain`, the worker asked to stop for a deploy) does not end the turn: a model call
or summary in flight is abandoned at once (nothing of it was recorded, so asking again later is
safe), running tools get `grace_s` to finish before the signal stops them with a
"worker_restarted" result, and at the next step boundary the turn stops as `handed_back`, for
another worker to go on with.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

from agent.loop.ports import HANDED_BACK, TurnOutcome, TurnSink
from agent.tools.cancel import CancelSignal
from agent.tools.texts import CancelReason
from agent.wire import TurnCancel

T = TypeVar("T")

TIMED_OUT_TEXT = "Turn hit its time limit of {seconds} s and was stopped."


class TurnStopped(Exception):
    """The turn cannot go on (cancel, deadline, failure); carries the outcome to return."""

    def __init__(self, outcome: TurnOutcome) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


class TurnStopping:
    """The cancel signal of one turn, and what sets it: a pushed cancel and the deadline."""

    def __init__(self, sink: TurnSink, deadline_s: float | None) -> None:
        self.sink = sink
        self.deadline_s = deadline_s
        self.signal = CancelSignal()
        self.timed_out = False
        self.draining = False
        self._drained: asyncio.Event | None = None

    def drain(self, grace_s: float) -> None:
        """The worker is restarting: hand the turn back (see the module's doc). On the loop's thread."""
        if self.draining:
            return
        self.draining = True
        self._drained_event().set()
        asyncio.get_running_loop().call_later(
            grace_s, lambda: self.signal.cancel("worker_restarted", after_s=grace_s)
        )

    def cancel(self, reason: CancelReason) -> None:
        """Stop the turn (a Stop click, a lost lease). On the loop's thread."""
        self.signal.cancel(reason)

    async def stop_if_cancelled(self, turn_id: str, steps: int) -> None:
        """Raise `TurnStopped` when the turn must stop: handed back while draining (unless a
        cancel came first), else with the cancel recorded when the signal is set."""
        if self.draining and self.signal.reason in (None, "worker_restarted"):
            raise TurnStopped(TurnOutcome(HANDED_BACK, steps=steps))
        if not self.signal.cancelled:
            return
        reason = self.signal.reason
        assert reason is not None and reason != "worker_restarted"
        await self.sink.record(
            TurnCancel(turn_id=turn_id, target="active", reason=reason), f"{turn_id}:cancel"
        )
        if self.timed_out:
            seconds = int(self.deadline_s or 0)
            raise TurnStopped(
                TurnOutcome("timed_out", error=TIMED_OUT_TEXT.format(seconds=seconds), steps=steps)
            )
        raise TurnStopped(TurnOutcome("cancelled", steps=steps))

    async def cancellable(self, work: Awaitable[T], turn_id: str, step: int) -> T:
        """Await `work`; when the signal is set first, stop it and stop the turn."""
        task = asyncio.ensure_future(work)
        stops = {
            asyncio.ensure_future(self.signal.wait()),
            asyncio.ensure_future(self._drained_event().wait()),
        }
        try:
            await asyncio.wait({task, *stops}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for stop in stops:
                stop.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        await self.stop_if_cancelled(turn_id, step)
        raise AssertionError("unreachable: the signal was set or the turn is draining")

    def _drained_event(self) -> asyncio.Event:
        if self._drained is None:  # made on the loop that awaits it
            self._drained = asyncio.Event()
        return self._drained

    def start_deadline(self) -> asyncio.TimerHandle | None:
        if self.deadline_s is None:
            return None

        def expire() -> None:
            self.timed_out = True
            self.signal.cancel("aborted")

        return asyncio.get_running_loop().call_later(self.deadline_s, expire)
