"""Workers lower their CPU priority and run as batch work; their autogroup's priority too when
they lead their session alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

AUTOGROUP = Path("/proc/self/autogroup")
LOWER_AND_REPORT = (
    "import json, os; from gateway.processes.cpu_priority import lower_priority_to; lower_priority_to(7); "
    "print(json.dumps([os.nice(0), open('/proc/self/autogroup').read(), os.sched_getscheduler(0)]))"
)

pytestmark = pytest.mark.skipif(not AUTOGROUP.exists(), reason="this kernel has no autogroup scheduling")


def _lower_in_child(*, new_session: bool) -> tuple[int, str, int]:
    """The child's nice value, its /proc/self/autogroup text and its scheduling policy."""
    done = subprocess.run(
        [sys.executable, "-c", LOWER_AND_REPORT],
        capture_output=True,
        text=True,
        check=True,
        start_new_session=new_session,
    )
    nice, group, policy = json.loads(done.stdout)
    return nice, group, policy


def test_a_worker_leading_its_own_session_lowers_its_group() -> None:
    nice, group, policy = _lower_in_child(new_session=True)
    assert (nice, policy) == (7, os.SCHED_BATCH)
    assert group.split()[1:] == ["nice", "7"]


def test_a_worker_sharing_a_session_leaves_the_group_to_the_others_in_it() -> None:
    # A session that never called setsid (a container's first one) reads empty: the root group,
    # which must stay untouched just the same.
    before = AUTOGROUP.read_text()
    nice, group, policy = _lower_in_child(new_session=False)
    assert (nice, group, policy) == (7, before, os.SCHED_BATCH)
    assert AUTOGROUP.read_text() == before  # this test process (playing `web`) kept its priority
