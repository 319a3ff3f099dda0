"""What reading the thread costs the acknowledgement of a mid-thread mention (issue 20, part 3).

    python -m bench.thread_context [--mentions 10] [--slack-ms 150] [--redis redis://127.0.0.1:6379/14]

Runs the real `web` and `worker` commands against real Redis, the fake Slack and a fake model.
Each mention is the first in its thread, either at the top of a channel (no thread to read) or
as a reply in a thread of 50 messages by 10 people nobody has looked up yet (one
`conversations.replies` call and 10 `users.info` calls before the ack). `--slack-ms` makes the
fake Slack answer those calls that much later, as a real Slack across the internet would.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from redis import Redis

from agent.testing import FakeLLM
from bench.events import app_mention
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack, Fault
from gateway.sandbox.stack import BOT_TOKEN, Stack

THREAD_MESSAGES = 50
THREAD_PEOPLE = 10
MANY = 100_000  # the latency fault never runs out during a run


def thread_in(slack: FakeSlack, channel: str, index: int) -> dict:
    root = slack.add_user_message(channel, "the deploy is red", user=f"W{index:04d}00")
    for n in range(1, THREAD_MESSAGES):
        slack.add_user_message(
            channel, f"note {n}", user=f"W{index:04d}{n % THREAD_PEOPLE:02d}", thread_ts=root["ts"]
        )
    return root


def ack_ms(stack: Stack, slack: FakeSlack, index: int, *, mid_thread: bool) -> float:
    channel, user = f"C{index + 2000}{int(mid_thread)}", f"W9{index:05d}{int(mid_thread)}"
    root = thread_in(slack, channel, index) if mid_thread else None
    said = slack.add_user_message(
        channel, f"<@{BOT_USER_ID}> fix it", user=user, thread_ts=root and root["ts"]
    )
    body = app_mention(said["ts"], channel, "fix it", f"Evctx{index}{int(mid_thread)}", user=user)
    if root is not None:
        body["event"]["thread_ts"] = root["ts"]
    started = time.perf_counter()
    response = stack.send_event(body)
    assert response.status_code == 200, response.text
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mentions", type=int, default=10)
    parser.add_argument("--slack-ms", type=float, default=150.0)
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    args = parser.parse_args()
    Redis.from_url(args.redis).flushdb()
    slack, llm = FakeSlack(bot_token=BOT_TOKEN).start(), FakeLLM().start()
    for method in ("conversations.replies", "users.info"):
        slack.inject(Fault(method, count=MANY, delay_s=args.slack_ms / 1000, after_work=True))
    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(Path(tmp), args.redis, slack.api_url, llm.base_url).start()
        try:
            ack_ms(stack, slack, -1, mid_thread=False)  # warm-up: imports, auth.test, connections
            top = [ack_ms(stack, slack, i, mid_thread=False) for i in range(args.mentions)]
            mid = [ack_ms(stack, slack, i, mid_thread=True) for i in range(args.mentions)]
        finally:
            stack.stop()
            slack.stop()
            llm.stop()
    print(f"mentions: {args.mentions} of each kind; fake Slack answers after {args.slack_ms:.0f} ms")
    for label, acks in (("top-level (author looked up)", top), ("mid-thread, 50 msgs/10 people", mid)):
        print(f"HTTP 200, {label:30s} median {statistics.median(acks):7.1f} ms   max {max(acks):7.1f} ms")


if __name__ == "__main__":
    main()
