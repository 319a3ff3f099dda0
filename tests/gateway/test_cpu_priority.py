"""Workers lower their CPU priority and run as batch work; their autogroup's priority too when
they lead their session alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

AUTOGROUP = Path("/proc/self/autogroup")
LOWER_AND_REPORT = (
    "import os; from gateway.cpu_priority import lower_priority_to; lower_priority_to(7); "
    "print(os.nice(0), open('/proc/self/autogroup').read().split()[-1], os.sched_getscheduler(0))"
)

pytestmark = pytest.mark.skipif(not AUTOGROUP.exists(), reason="this kernel has no autogroup scheduling")


def _lower_in_child(*, new_session: bool) -> tuple[int, int, int]:
    done = subprocess.run(
        [sys.executable, "-c", LOWER_AND_REPORT],
        capture_output=True,
        text=True,
        check=True,
        start_new_session=new_session,
    )
    nice, group_nice, policy = done.stdout.split()
    return int(nice), int(group_nice), int(policy)


def _group_nice() -> int:
    return int(AUTOGROUP.read_text().split()[-1])


def test_a_worker_leading_its_own_session_lowers_its_group() -> None:
    assert _lower_in_child(new_session=True) == (7, 7, os.SCHED_BATCH)


def test_a_worker_sharing_a_session_leaves_the_group_to_the_others_in_it() -> None:
    before = _group_nice()
    nice, group_nice, policy = _lower_in_child(new_session=False)
    assert (nice, group_nice, policy) == (7, before, os.SCHED_BATCH)
    assert _group_nice() == before  # this test process (playing `web`) kept its priority
