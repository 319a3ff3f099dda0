"""What the benchmarks read back from the fake Slack, and how they wait for it."""

from __future__ import annotations

import time
from collections.abc import Callable

from gateway.sandbox.fake_slack import FakeSlack

POLL_S = 0.1


def answer_times(slack: FakeSlack, answer: str) -> dict[str, float]:
    """thread ts → when a message containing `answer` was first posted there (the fake's own
    record of the call)."""
    times: dict[str, float] = {}
    for call in slack.calls("chat.postMessage"):
        if call.outcome == "ok" and answer in str(call.args):
            times.setdefault(str(call.args.get("thread_ts")), call.at)
    return times


def wait_until(check: Callable[[], object], timeout_s: float, what: str) -> bool:
    """Poll `check` until it holds or `timeout_s` passes (said, with `what`, and False)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            print(f"  (gave up waiting for {what} after {timeout_s:g} s)")
            return False
        time.sleep(POLL_S)
    return True
