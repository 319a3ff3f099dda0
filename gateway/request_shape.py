"""Refuse request bodies Bolt cannot even parse, before Bolt sees them (it would answer 500).

Slack sends JSON objects (events) or forms (commands, and `payload=<JSON object>` for
interactivity). Anything else is answered 401 when unsigned and 400, naming the problem,
when signed: never a 5xx, and nothing is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from slack_sdk.signature import SignatureVerifier


def body_problem(body: bytes, content_type: str) -> str | None:
    if not body:
        return "the body is empty"
    try:
        text = body.decode()
    except UnicodeDecodeError:
        return "the body is not UTF-8"
    if "application/json" in content_type:
        return _object_problem(text, "the JSON body")
    fields = parse_qs(text)
    if "payload" in fields:
        return _object_problem(fields["payload"][0], "the payload field")
    return None


def signed(verifier: SignatureVerifier, body: bytes, headers: Mapping[str, Any]) -> bool:
    timestamp = headers.get("HTTP_X_SLACK_REQUEST_TIMESTAMP", "")
    if not timestamp.isdigit():
        return False
    return verifier.is_valid(
        body=body.decode(errors="replace"),
        timestamp=timestamp,
        signature=headers.get("HTTP_X_SLACK_SIGNATURE", ""),
    )


# Bolt indexes into these without checking their type; Slack always sends them as objects.
_OBJECT_FIELDS = (
    "event",
    "user",
    "team",
    "channel",
    "message",
    "previous_message",
    "item",
    "view",
    "container",
)
_EVENT_OBJECT_FIELDS = ("message", "previous_message", "item", "assistant_thread")


def _object_problem(text: str, what: str) -> str | None:
    try:
        value = json.loads(text)
    except ValueError:
        return f"{what} is not JSON"
    if not isinstance(value, dict):
        return f"{what} is not a JSON object"
    return _shape_problem(value)


def _shape_problem(body: dict[str, Any]) -> str | None:
    for name in _OBJECT_FIELDS:
        if name in body and body[name] is not None and not isinstance(body[name], dict):
            return f"{name} is not an object"
    event = body.get("event")
    if isinstance(event, dict):
        for name in _EVENT_OBJECT_FIELDS:
            if name in event and event[name] is not None and not isinstance(event[name], dict):
                return f"event.{name} is not an object"
        if not isinstance(event.get("type", ""), str):
            return "event.type is not a string"
        if str(event.get("type", "")).startswith("assistant_thread_") and not _names_a_thread(event):
            return "event.assistant_thread lacks channel_id or thread_ts"  # Bolt's Assistant needs both
    if "authorizations" in body and not _list_of_objects(body["authorizations"], allow_empty=True):
        return "authorizations is not a list of objects"
    if body.get("type") == "block_actions" and not _list_of_objects(body.get("actions"), allow_empty=False):
        return "actions is not a non-empty list of objects"
    return None


def _names_a_thread(event: dict[str, Any]) -> bool:
    thread = event.get("assistant_thread")
    names = ("channel_id", "thread_ts")
    return isinstance(thread, dict) and all(isinstance(thread.get(name), str) for name in names)


def _list_of_objects(value: Any, *, allow_empty: bool) -> bool:
    return (
        isinstance(value, list) and (allow_empty or bool(value)) and all(isinstance(v, dict) for v in value)
    )
