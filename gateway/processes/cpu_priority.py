"""Workers yield the CPU to `web`: Slack's 3-second ack must never queue behind turn work.

Two levers, both only ever lowering: the nice value (the share of the CPU when both want it) and
the SCHED_BATCH policy, under which a worker waking up never preempts a running `web` thread;
the worker keeps its share, so turns never starve.

`nice` alone is not enough on Linux with autogroup scheduling (the default on desktop and many
server kernels): each session (`setsid`) is a group of its own, groups share the CPU equally,
and a process's nice value only ranks it inside its group. A worker that leads its session,
alone or under its supervisor, is such a group, so its group's nice value is lowered as well.
A worker sharing a session with `web` (`threadline run`) leaves the group alone, since that
would lower `web` too; plain nice already ranks it there.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

AUTOGROUP = Path("/proc/self/autogroup")  # reads "/autogroup-85 nice 0"; takes a nice value


def lower_priority_to(niceness: int, *, supervisor_pid: int | None = None) -> None:
    """Lower this process's CPU priority to `niceness` and make it batch work (0: leave it be).

    Threads and processes started afterwards inherit both.
    """
    if niceness <= 0:
        return
    current = os.nice(0)
    if niceness > current:
        os.nice(niceness - current)
    if os.getsid(0) in (os.getpid(), supervisor_pid):
        _lower_group_to(niceness)
    with contextlib.suppress(OSError, AttributeError):  # not Linux: nice is all there is
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))


def _lower_group_to(niceness: int) -> None:
    try:
        current = int(AUTOGROUP.read_text().split()[-1])
        if niceness > current:
            AUTOGROUP.write_text(str(niceness))
    except (OSError, ValueError, IndexError):  # no autogroup (kernel, container): nice is all there is
        log.debug("no autogroup to lower", exc_info=True)
