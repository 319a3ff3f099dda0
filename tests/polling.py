"""Wait for a condition with a deadline: the only way tests synchronise with other processes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_EVERY_S = 0.02
# Generous: it only bounds how long a failing test takes. End-to-end waits include process start-up,
# which on a loaded 2-core CI machine has taken over 15 s.
DEFAULT_TIMEOUT_S = 30.0


def wait_for(check: Callable[[], T], *, timeout: float = DEFAULT_TIMEOUT_S, what: str = "condition") -> T:
    deadline = time.monotonic() + timeout
    last: T = check()
    while not last:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")
        time.sleep(POLL_EVERY_S)
        last = check()
    return last
