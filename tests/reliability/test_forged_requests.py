"""Forged and replayed requests: refused, or (a replay inside the window) harmless."""

from __future__ import annotations

import json
import time

import pytest

from gateway.sandbox.signing import signed_headers
from gateway.sandbox.stack import SIGNING_SECRET, Stack
from tests.e2e.test_bad_input import recorded
from tests.polling import wait_for
from tests.slack_events import mention

FIVE_MINUTES = 5 * 60


def headers_for(body: bytes, **changes: object) -> dict[str, str]:
    stamp = int(time.time()) + int(changes.get("shift", 0))  # type: ignore[call-overload]
    secret = str(changes.get("secret", SIGNING_SECRET))
    signed_over = changes.get("signed_over", body)
    headers = {"Content-Type": "application/json", **signed_headers(secret, signed_over, timestamp=stamp)}  # type: ignore[arg-type]
    for name in changes.get("drop", ()):  # type: ignore[attr-defined]
        headers.pop(name)
    return headers


FORGERIES = {
    "no signature": {"drop": ("X-Slack-Signature",)},
    "no timestamp": {"drop": ("X-Slack-Request-Timestamp",)},
    "signed with another secret": {"secret": "not-the-secret"},
    "signature over another body": {"signed_over": b'{"type":"event_callback"}'},
    "older than five minutes": {"shift": -(FIVE_MINUTES + 5)},
    "more than five minutes ahead": {"shift": FIVE_MINUTES + 5},
}


@pytest.mark.parametrize("name", list(FORGERIES))
def test_forged_requests_are_refused_and_record_nothing(stack: Stack, redis, name: str):
    body = json.dumps(mention("do something", ts="1700000000.000900")).encode()
    before = recorded(redis)
    response = stack.client.post("/slack/events", content=body, headers=headers_for(body, **FORGERIES[name]))
    assert response.status_code == 401
    assert recorded(redis) == before


def test_a_replay_inside_the_window_makes_no_second_input(stack: Stack, redis, fake_slack, fake_llm):
    root = fake_slack.add_user_message("C111", "<@UBOT0001> once", user="W222")
    body = json.dumps(mention("once", ts=root["ts"])).encode()
    headers = headers_for(body)
    first = stack.client.post("/slack/events", content=body, headers=headers)
    replay = stack.client.post("/slack/events", content=body, headers=headers)
    assert first.status_code == replay.status_code == 200
    wait_for(lambda: any(m.get("bot_id") for m in fake_slack.thread("C111", root["ts"])), what="the answer")
    wire = redis.xrange(f"tl:{{T111:C111:{root['ts']}}}:wire")
    users = [entry for _, entry in wire if json.loads(entry[b"r"]).get("message", {}).get("role") == "user"]
    assert len(users) == 1 and len(fake_llm.requests) == 1
