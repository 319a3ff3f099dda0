"""What the benchmarks read back from the fake Slack, and how they wait for it."""

from __future__ import annotations

import time
from collections.abc import Callable

from gateway.sandbox.fake_slack import FakeSlack

POLL_S = 0.1


def answer_times(slack: FakeSlack, answer: str) -> dict[str, float]:
    """thread ts → when a message containing `answer` first reached Slack there (the fake's own
    record of the call): a post, or a streamed step's start or append."""
    times: dict[str, float] = {}
    streams: dict[str, str] = {}  # a streamed message's ts → its thread's, from the fake's state
    with slack.state.lock:  # the fake's HTTP threads write it meanwhile
        for channel in slack.state.messages.values():
            for ts, message in channel.items():
                streams[ts] = str(message.get("thread_ts", ts))
    for call in slack.calls():
        if call.outcome != "ok" or answer not in str(call.args):
            continue
        if call.method in ("chat.postMessage", "chat.startStream"):
            times.setdefault(str(call.args.get("thread_ts")), call.at)
        elif call.method == "chat.appendStream" and str(call.args.get("ts")) in streams:
            times.setdefault(streams[str(call.args.get("ts"))], call.at)
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
