"""Worker processes die with the process that started them.

`threadline worker` supervises its RQ workers as children, and with the forking worker class RQ
forks a work horse below each. When a parent is SIGKILLed its children would
otherwise live on with the settings they started with and keep taking jobs: a crash of the
supervisor must look like a crash of the whole worker, which leases and the janitor recover.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
SUPERVISOR_PID = "THREADLINE_SUPERVISOR_PID"  # set by `threadline worker` for the workers it starts


def die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process, and every process it forks, when `parent` exits."""
    if os.getppid() != parent:  # it is already gone
        os._exit(1)
    if not sys.platform.startswith("linux"):
        return
    _set_parent_death_signal()
    os.register_at_fork(after_in_child=_set_parent_death_signal)


def _set_parent_death_signal() -> None:
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return  # not allowed here (a sandboxed kernel): nothing worse than before
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
