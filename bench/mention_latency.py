"""Time from a signed `app_mention` to the answer in the fake Slack thread (issue 2).

    python -m bench.mention_latency [--mentions 30] [--redis redis://127.0.0.1:6379/14]

Runs the real `web` and `worker` commands (as the Procfile does) against real Redis, the fake
Slack Web API and a fake model that answers at once, and sends mentions one after another.
Reports the HTTP acknowledgement, the first visible sign that the mention was taken (👀 on it
or the working status, whichever Slack showed first), the first streamed text after the model's
first token (with SLACK_STREAMING on, the default) and the whole answer in the thread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from redis import Redis

from agent.testing import FakeLLM
from bench.events import app_mention
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.stack import BOT_TOKEN, Stack

POLL_S = 0.001


def channel_of(index: int) -> str:
    # A channel per mention: threadline paces posts to 1 per second per channel as Slack asks,
    # so sequential mentions in one channel would measure that pace, not the product.
    return f"C{index + 1000}"


def person_of(index: int) -> str:
    # A person per mention too: the per-person quota (10 a minute) would refuse the eleventh.
    return f"W{index + 1000:06d}"


def mention_body(ts: str, index: int) -> dict:
    return app_mention(ts, channel_of(index), f"ping {index}", f"Evbench{index}", user=person_of(index))


def measure(
    stack: Stack, slack: FakeSlack, llm: FakeLLM, index: int
) -> tuple[float, float, float, float | None]:
    root = slack.add_user_message(channel_of(index), f"<@{BOT_USER_ID}> ping {index}", user=person_of(index))
    started_at = time.time()  # the fake Slack stamps each call with the wall clock
    started = time.perf_counter()
    response = stack.send_event(mention_body(root["ts"], index))
    acked = time.perf_counter() - started
    assert response.status_code == 200, response.text
    deadline = started + 30
    while not any(_complete(m) for m in slack.thread(channel_of(index), root["ts"])):
        if time.perf_counter() > deadline:
            raise RuntimeError(f"no answer for mention {index}")
        time.sleep(POLL_S)
    answered = time.perf_counter() - started
    sign = first_sign_at(slack, channel_of(index), root["ts"]) - started_at
    return acked, answered, sign, first_streamed_text_after(slack, llm, channel_of(index), started_at)


def _complete(message: dict) -> bool:
    """A bot message whose text is all there: posted, or a stream that was stopped."""
    return bool(message.get("bot_id")) and not message.get("streaming")


def first_streamed_text_after(slack: FakeSlack, llm: FakeLLM, channel: str, since: float) -> float | None:
    """From the model's first token to the fake Slack receiving the first text of the answer's
    step: streamed (chat.startStream or chat.appendStream with a markdown_text chunk), or the
    step posted whole because it was written by the time delivery reached it (a post under its
    `live:` entry); None: not streamed (the answer posted at the end, as with streaming off)."""
    first_token = min((at for at in llm.first_text_at if at >= since), default=None)
    streamed = [
        c.at for c in slack.calls()
        if c.outcome == "ok" and c.args.get("channel") == channel and c.at >= since
        and (_streamed_text(c.method, c.args) or _step_posted_whole(c.method, c.args))
    ]  # fmt: skip
    if first_token is None or not streamed:
        return None
    return min(streamed) - first_token


def _streamed_text(method: str, args: dict[str, Any]) -> bool:
    chunks = args.get("chunks") or []
    return method in ("chat.startStream", "chat.appendStream") and any(
        chunk.get("type") == "markdown_text" for chunk in chunks
    )


def _step_posted_whole(method: str, args: dict[str, Any]) -> bool:
    entry = ((args.get("metadata") or {}).get("event_payload") or {}).get("outbox_id") or ""
    return method == "chat.postMessage" and entry.startswith("live:")


def first_sign_at(slack: FakeSlack, channel: str, ts: str) -> float:
    """When the thread first showed that the mention was taken: 👀 on it, or the working status."""
    seen = [
        c.at for c in slack.calls("reactions.add")
        if c.outcome == "ok" and c.args.get("channel") == channel and c.args.get("timestamp") == ts
    ]  # fmt: skip
    working = [
        c.at for c in slack.calls("assistant.threads.setStatus")
        if c.outcome == "ok" and c.args.get("channel_id") == channel and c.args.get("thread_ts") == ts
        and c.args.get("status")
    ]  # fmt: skip
    if not seen and not working:
        raise RuntimeError(f"no sign of the mention in {channel} was ever shown")
    return min(seen + working)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mentions", type=int, default=30)
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    args = parser.parse_args()
    Redis.from_url(args.redis).flushdb()
    slack, llm = FakeSlack(bot_token=BOT_TOKEN).start(), FakeLLM().start()
    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(Path(tmp), args.redis, slack.api_url, llm.base_url).start()
        try:
            measure(stack, slack, llm, -1)  # warm-up: imports, the first auth.test, connections
            results = [measure(stack, slack, llm, index) for index in range(args.mentions)]
        finally:
            stack.stop()
    acks, replies, signs = ([r[i] * 1000 for r in results] for i in (0, 1, 2))
    texts = [r[3] * 1000 for r in results if r[3] is not None]
    print(f"mentions: {args.mentions} (sequential, a channel each; model answers at once; default worker)")
    print(f"HTTP 200 after:        median {statistics.median(acks):7.1f} ms   max {max(acks):7.1f} ms")
    print(
        f"first visible sign after: median {statistics.median(signs):7.1f} ms   max {max(signs):7.1f} ms"
        "   (👀 or the working status; target: median <= 300 ms)"
    )
    if texts:
        print(
            f"first streamed text after the model's first token: median {statistics.median(texts):7.1f} ms"
            f"   max {max(texts):7.1f} ms   ({len(texts)} streamed or posted whole; target: median <= 500 ms)"
        )
    else:
        print("first streamed text: none streamed (SLACK_STREAMING=off, or Slack refused it)")
    print(
        f"answer in thread after: median {statistics.median(replies):7.1f} ms   "
        f"p90 {statistics.quantiles(replies, n=10)[-1]:7.1f} ms   max {max(replies):7.1f} ms"
    )


if __name__ == "__main__":
    main()
