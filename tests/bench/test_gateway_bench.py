"""The load generator behind bench.gateway, run briefly: every request answered, every latency kept.

No wall-time asserts: timings belong in `bench/`, this only checks the machinery is sound.
"""

from __future__ import annotations

import asyncio
import gc
import json
from collections import Counter
from pathlib import Path

import httpx
import pytest

from bench.gateway import HOST, Crowd, fire, mention, signed_mentions, start_bare, trivial_asgi_app
from bench.open_loop import Run, post, read_response
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import Stack
from jobs.settings import Settings

RATE = 50
SECONDS = 1


def _all_answered(run: Run, count: int) -> None:
    assert run.sent == count
    assert [outcome.status for outcome in run.outcomes] == [200] * count
    assert run.errors == 0
    assert len(run.latencies_ms()) == count
    assert all(latency > 0 for latency in run.latencies_ms())
    assert run.percentile_ms(50) <= run.percentile_ms(99) <= run.latencies_ms()[-1]


def test_every_request_to_the_trivial_asgi_app_is_answered_and_timed() -> None:
    count = RATE * SECONDS
    with trivial_asgi_app() as port:
        requests = [post(HOST, port, "/", json.dumps({"i": i}).encode(), {}) for i in range(count)]
        run = fire(port, requests, RATE, connections=2)
    _all_answered(run, count)


def test_no_garbage_collection_pauses_the_generator_while_its_clock_runs() -> None:
    count = 2_000  # enough garbage for dozens of collections, were they allowed
    with trivial_asgi_app() as port:
        requests = [post(HOST, port, "/", json.dumps({"i": i}).encode(), {}) for i in range(count)]
        run = fire(port, requests, 2_000, connections=4)
    _all_answered(run, count)
    assert run.collections == 0
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_the_trivial_asgi_app_answers_a_large_body_ok_and_is_stopped_after() -> None:
    with trivial_asgi_app() as port:
        response = httpx.post(f"http://{HOST}:{port}/events", content=b"x" * 1_000_000)
    assert (response.status_code, response.text) == (200, "ok")
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://{HOST}:{port}/")


def test_a_response_in_chunks_or_closing_its_connection_is_read_whole() -> None:
    async def read(raw: bytes) -> tuple[int, bool, bytes]:
        reader = asyncio.StreamReader()
        reader.feed_data(raw + b"NEXT")
        reader.feed_eof()
        status, reusable = await read_response(reader)
        return status, reusable, await reader.read()

    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
    closing = b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 3\r\nConnection: close\r\n\r\nno!"
    assert asyncio.run(read(chunked)) == (200, True, b"NEXT")
    assert asyncio.run(read(closing)) == (401, False, b"NEXT")


def test_every_mention_is_a_new_thread_with_its_own_event_id() -> None:
    events = [mention(3, index, Crowd(people=10, channels=4)) for index in range(100)]
    assert len({event["event_id"] for event in events}) == 100
    assert len({event["event"]["ts"] for event in events}) == 100
    assert {event["event"]["channel"] for event in events} == {"C100", "C101", "C102", "C103"}
    assert len({event["event"]["user"] for event in events}) == 10
    assert all("thread_ts" not in event["event"] for event in events)


def test_the_crowd_is_large_enough_that_no_default_quota_refuses() -> None:
    settings = Settings()
    crowd = Crowd.unrefused(2_000, 200, settings)
    events = [mention(1, index, crowd) for index in range(crowd.people)]  # the warm-up: one each
    events += [mention(2, index, crowd) for index in range(2_000)]
    per_person = Counter(event["event"]["user"] for event in events)
    per_channel = Counter(event["event"]["channel"] for event in events)
    most = min(settings.QUOTA_MENTIONS_PER_USER_PER_MINUTE, settings.QUOTA_SESSIONS_PER_USER)
    assert max(per_person.values()) <= most
    assert max(per_channel.values()) <= settings.QUOTA_MENTIONS_PER_CHANNEL_PER_MINUTE


@pytest.mark.e2e
def test_the_bare_bolt_app_acknowledges_every_signed_mention(tmp_path: Path, fake_slack: FakeSlack) -> None:
    stack = Stack(tmp_path, "redis://unused", fake_slack.api_url, "http://unused/v1", WEB_CONCURRENCY="1")
    try:
        start_bare(stack)
        run = fire(stack.port, signed_mentions(stack.port, 1, RATE * SECONDS), RATE, connections=2)
    finally:
        stack.stop()
    _all_answered(run, RATE * SECONDS)
