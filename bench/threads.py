"""What the benchmarks read back from the fake Slack, and how they wait for it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gateway.sandbox.fake_slack import FakeSlack

POLL_S = 0.1


def answer_times(slack: FakeSlack, answer: str) -> dict[str, float]:
    """thread ts → when `answer` was first whole in a message there (the fake's own record of
    the call): a post, or the call of a streamed message (its start, an append or its stop)
    after which the text streamed so far holds it: the model's pieces may split it."""
    times: dict[str, float] = {}
    thread_of: dict[str, str] = {}  # a streamed message's ts → its thread's, from the fake's state
    started: dict[tuple[str, str], list[str]] = {}  # (channel, thread) → its streams' ts, oldest first
    with slack.state.lock:  # the fake's HTTP threads write it meanwhile
        for channel, messages in slack.state.messages.items():
            for ts, message in sorted(messages.items(), key=lambda item: float(item[0])):
                thread_of[ts] = str(message.get("thread_ts", ts))
                if "appends" in message:  # a streamed message
                    started.setdefault((channel, thread_of[ts]), []).append(ts)
    text: dict[str, str] = {}  # a streamed message's ts → the text streamed into it so far
    for call in slack.calls():
        if call.outcome != "ok":
            continue
        if call.method == "chat.postMessage":
            if answer in str(call.args):
                times.setdefault(str(call.args.get("thread_ts")), call.at)
            continue
        if call.method == "chat.startStream":
            ts = started[(str(call.args.get("channel")), str(call.args.get("thread_ts")))].pop(0)
        elif call.method in ("chat.appendStream", "chat.stopStream"):
            ts = str(call.args.get("ts"))
        else:
            continue
        text[ts] = text.get(ts, "") + _streamed_text(call.args)
        if answer in text[ts]:
            times.setdefault(thread_of[ts], call.at)
    return times


def _streamed_text(args: dict[str, Any]) -> str:
    chunks = args.get("chunks") or []
    pieces = [c.get("text", "") for c in chunks if isinstance(c, dict) and c.get("type") == "markdown_text"]
    return str(args.get("markdown_text") or "") + "".join(pieces)


def wait_until(check: Callable[[], object], timeout_s: float, what: str, poll_s: float = POLL_S) -> bool:
    """Poll `check` every `poll_s` until it holds or `timeout_s` passes (said, with `what`, and False)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            print(f"  (gave up waiting for {what} after {timeout_s:g} s)")
            return False
        time.sleep(poll_s)
    return True
