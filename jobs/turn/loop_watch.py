"""What a late event loop is waiting on, seen from a thread beside it (jobs.turn.host).

The stall probe only says that the loop is late. On a busy machine it is late now and then for
reasons of the machine's own: the scheduler, other threads holding the GIL. A call that blocks
the loop is different: the loop thread sleeps in the kernel waiting for that call (a socket read
of a synchronous Redis client, a FIFO, a sleep) rather than in its own wait for events
(`epoll`) or for the GIL (a futex). Linux names where a thread sleeps (`/proc/.../wchan`), so
a watch can tell the two apart, and name the Python code that made the call.

A futex wait looks like the GIL's: a `threading.Lock` taken on the loop is not seen here.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

OWN_WAITS = ("do_epoll_wait", "ep_poll", "futex")  # the loop waiting for events, a thread for the GIL
FRAMES_SHOWN = 4


def kernel_wait(native_id: int | None) -> str | None:
    """Where the thread sleeps in the kernel, or None while it runs (or it cannot be read)."""
    if native_id is None:
        return None
    try:
        wchan = Path(f"/proc/self/task/{native_id}/wchan").read_text().strip()
    except OSError:
        return None
    return None if wchan in ("", "0") else wchan


def blocked(wait: str | None) -> bool:
    """Sleeping in the kernel for something other than events or the GIL."""
    return wait is not None and not wait.startswith(OWN_WAITS)


def python_at(thread_ident: int | None) -> str:
    """The innermost frames the thread runs, innermost first: `module.py:line function < …`."""
    frame = sys._current_frames().get(thread_ident) if thread_ident is not None else None
    if frame is None:
        return "(no frame)"
    frames = traceback.extract_stack(frame)[-FRAMES_SHOWN:]
    return " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))
