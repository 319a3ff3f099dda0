"""The cancel signal a turn hands to its tool batch (context-core.md §4.5).

Like `asyncio.Event`, plus the reason (a user's cancel or a system abort, which the model is
told differently) and synchronous callbacks, so the executor and the batch adapter react in
the same loop iteration the cancel happens in.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from agent.tools import texts
from agent.tools.texts import CancelReason

log = logging.getLogger(__name__)

CancelCallback = Callable[[CancelReason], None]


class CancelSignal:
    def __init__(self) -> None:
        self._reason: CancelReason | None = None
        self.after_s: float | None = None  # for "worker_restarted": how long the tools were given
        self._event: asyncio.Event | None = None
        self._callbacks: list[CancelCallback] = []

    @property
    def cancelled(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> CancelReason | None:
        return self._reason

    def cancel(self, reason: CancelReason = "aborted", *, after_s: float | None = None) -> None:
        """Set the signal once; later calls keep the first reason. Call it on the loop's thread
        (from another thread: `loop.call_soon_threadsafe(signal.cancel, reason)`)."""
        if self._reason is not None:
            return
        self._reason = reason
        self.after_s = after_s
        if self._event is not None:
            self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(reason)
            except Exception:  # one listener failing must not keep the others from hearing it
                log.exception("cancel callback failed")

    def aborted_text(self, name: str) -> str:
        """What the model reads for a call of `name` this cancel stopped or kept from running."""
        return texts.aborted(name, self._reason or "aborted", self.after_s)

    def add_callback(self, callback: CancelCallback) -> Callable[[], None]:
        """Run `callback(reason)` on cancel (at once if already cancelled); returns a remover."""
        if self._reason is not None:
            callback(self._reason)
            return _nothing
        self._callbacks.append(callback)
        return lambda: self._remove(callback)

    async def wait(self) -> CancelReason:
        if self._reason is None:
            if self._event is None:
                self._event = asyncio.Event()
            await self._event.wait()
        assert self._reason is not None
        return self._reason

    def _remove(self, callback: CancelCallback) -> None:
        if callback in self._callbacks:
            self._callbacks.remove(callback)


def _nothing() -> None:
    return None
