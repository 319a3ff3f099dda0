"""Malformed requests: a clear 4xx naming the problem, nothing recorded, never a 5xx."""

from __future__ import annotations

import json

import pytest

from gateway.sandbox.signing import signed_headers
from gateway.sandbox.stack import SIGNING_SECRET, Stack
from tests.rq_state import waiting, waiting_deliveries

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"


def event(inner: object, **outer: object) -> bytes:
    return json.dumps(
        {"type": "event_callback", "team_id": "T111", "event_id": "EvBad", "event": inner, **outer}
    ).encode()


def interaction(payload: dict) -> bytes:
    return b"payload=" + json.dumps(payload).encode()


CASES = {
    "not json": (b"{not json", JSON, "the JSON body is not JSON"),
    "empty": (b"", JSON, "the body is empty"),
    "a json list": (b"[1, 2]", JSON, "the JSON body is not a JSON object"),
    "event is a string": (event("x"), JSON, "invalid payload"),
    "mention without channel": (
        event({"type": "app_mention", "ts": "1.2", "text": "hi", "user": "U1"}),
        JSON,
        "channel is missing",
    ),
    "mention with a numeric ts": (
        event({"type": "app_mention", "ts": 5, "channel": "C1", "user": "U1"}),
        JSON,
        "ts is missing or not a string",
    ),
    "mention with a forged channel": (
        event({"type": "app_mention", "ts": "1.2", "channel": "C:1", "user": "U1"}),
        JSON,
        "channel: Value error",
    ),
    "mention text is a list": (
        event({"type": "app_mention", "ts": "1.2", "channel": "C1", "text": ["x"], "user": "U1"}),
        JSON,
        "text is not a string",
    ),
    "mention with a user_team object": (
        event({"type": "app_mention", "ts": "1.2", "channel": "C1", "user": "U1", "user_team": {"id": "T9"}}),
        JSON,
        "user_team is not a string",
    ),
    "mention with files that are not a list": (
        event({"type": "app_mention", "ts": "1.2", "channel": "C1", "user": "U1", "files": {"id": "F1"}}),
        JSON,
        "event.files is not a list of at most 10 files",
    ),
    "dm without ts": (
        event({"type": "message", "channel": "D1", "channel_type": "im", "text": "hi", "user": "U1"}),
        JSON,
        "ts is missing",
    ),
    "edit without message": (
        event({"type": "message", "subtype": "message_changed", "channel": "C1"}),
        JSON,
        "message is missing",
    ),
    "native stop without thread": (
        event({"type": "agent_session_stopped", "channel": "C1", "user": "U1"}),
        JSON,
        "thread_ts is missing",
    ),
    "native stop with a forged thread": (
        event({"type": "agent_session_stopped", "channel": "C1", "thread_ts": "1.2:3", "user": "U1"}),
        JSON,
        "thread_ts: Value error",
    ),
    "dm with a numeric thread_ts": (
        event(
            {
                "type": "message",
                "channel_type": "im",
                "channel": "D1",
                "user": "U1",
                "ts": "1.2",
                "thread_ts": 1,
            }
        ),
        JSON,
        "thread_ts is not a string",
    ),
    "form payload not json": (b"payload=%7Bnot", FORM, "the payload field is not JSON"),
    "form payload a list": (b"payload=%5B1%5D", FORM, "the payload field is not a JSON object"),
    "click without actions": (
        interaction({"type": "block_actions", "user": {"id": "U1"}, "team": {"id": "T1"}, "actions": []}),
        FORM,
        "actions is not a non-empty list of objects",
    ),
    "authorizations not a list": (event({"type": "app_mention"}, authorizations="x"), JSON, "authorizations"),
    "event.message not an object": (
        event({"type": "message", "message": 3}),
        JSON,
        "event.message is not an object",
    ),
    "assistant thread without thread_ts": (  # found by tests/reliability/test_fuzz_events.py
        event(
            {"type": "assistant_thread_started", "assistant_thread": {"user_id": "U1", "channel_id": "D1"}}
        ),
        JSON,
        "event.assistant_thread lacks channel_id or thread_ts",
    ),
    "click by a user that is not an object": (
        interaction(
            {
                "type": "block_actions",
                "user": "U1",
                "team": {"id": "T111"},
                "actions": [{"action_id": "tl_stop", "value": '{"s":"T111:C1:1.2"}'}],
            }
        ),
        FORM,
        "user is not an object",
    ),
    "skill command with a forged team": (
        b"command=%2Fagent&text=skill+x+https%3A%2F%2Fa.slack.com%2Farchives%2FC1%2Fp1700000000000001"
        b"&team_id=T%3A1&channel_id=C1&user_id=U1",
        FORM,
        "team: Value error",
    ),
    "command without user": (
        b"command=%2Fagent&text=cancel&team_id=T1&channel_id=C1",
        FORM,
        "user_id is missing",
    ),
    "shortcut without message": (
        interaction(
            {
                "type": "message_action",
                "callback_id": "tl_stop_run",
                "user": {"id": "U1"},
                "team": {"id": "T1"},
                "channel": {"id": "C1"},
            }
        ),
        FORM,
        "message is missing",
    ),
}


def post(stack: Stack, body: bytes, content_type: str, *, sign: bool = True):
    headers = {"Content-Type": content_type}
    if sign:
        headers.update(signed_headers(SIGNING_SECRET, body))
    return stack.client.post("/slack/events", content=body, headers=headers)


def recorded(redis) -> tuple[list[bytes], int, int]:
    """Sessions, dedupe keys and queued jobs: what a request could have written (not the janitor's)."""
    keys = redis.keys("tl:{*") + redis.keys("tl:dedupe:*") + redis.keys("tl:recent:*")
    return sorted(keys), waiting(redis), waiting_deliveries(redis)


@pytest.mark.parametrize("name", list(CASES))
def test_a_malformed_signed_request_is_refused_with_its_reason_and_changes_nothing(stack, redis, name):
    body, content_type, reason = CASES[name]
    before = recorded(redis)
    response = post(stack, body, content_type)
    assert response.status_code == 400
    assert response.json()["ok"] is False and reason in response.json()["error"]
    assert recorded(redis) == before
    assert stack.processes["web"].poll() is None


def test_an_unsigned_malformed_request_is_unauthorised_not_explained(stack, redis):
    response = post(stack, b"{not json", JSON, sign=False)
    assert response.status_code == 401
    assert recorded(redis) == ([], 0, 0)


def test_events_and_clicks_nothing_handles_are_acknowledged_quietly(stack, redis):
    unknown_event = event({"type": "reaction_added", "user": "U1", "item": {}})
    unknown_click = interaction(
        {
            "type": "block_actions",
            "user": {"id": "U1"},
            "team": {"id": "T111"},
            "actions": [{"action_id": "zz"}],
        }
    )
    assert post(stack, unknown_event, JSON).status_code == 200
    assert post(stack, unknown_click, FORM).status_code == 200
    assert recorded(redis) == ([], 0, 0)
