"""Read a signed request body the way Bolt will, with limits, and refuse what Bolt cannot use.

Slack sends JSON objects (events) or forms (commands, and `payload=<JSON object>` for
interactivity). `parse_as_bolt_does` makes the same dict Bolt's `parse_body` will make of the
same bytes (same JSON-or-form rule, same `parse_qsl`, the last of duplicate fields), but it
refuses, instead of crashing or guessing, what Bolt would read differently from us or choke on:
duplicate form fields, too many of them, JSON nested too deeply, anything not UTF-8. The web
process runs it only after `signed` has checked the raw bytes, so nothing unsigned is parsed.
A refused body is answered 400 naming the problem (415 for another content type): never a
5xx, and nothing is recorded.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from slack_sdk.signature import SignatureVerifier

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
# Slack's deepest payloads (a rich-text list in a message inside a click) nest about a dozen
# levels; Python's recursion limit (1,000) is where json.loads, and any later walk of the value,
# would fail instead.
MAX_JSON_DEPTH = 64
# A slash command has about 15 fields, an interaction one (`payload`); parse_qsl counts the `&`
# before it splits anything, so a body of 100,000 fields costs one str.count.
MAX_FORM_FIELDS = 64
SIGNATURE_MAX_AGE_S = 5 * 60  # slack-sdk's and Bolt's window


class BodyRefused(ValueError):
    """The body is not one Bolt would read as Slack means it; the message says why."""


def media_type_problem(content_type: str) -> str | None:
    media = content_type.split(";")[0].strip().lower()
    if media in (JSON, FORM):
        return None
    return f"the content type is {media!r}, not {JSON} or {FORM}" if media else "there is no content type"


def body_problem(body: bytes, content_type: str) -> str | None:
    try:
        return _shape_problem(parse_as_bolt_does(body, content_type))
    except BodyRefused as refused:
        return str(refused)


def parse_as_bolt_does(body: bytes, content_type: str) -> dict[str, Any]:
    """What slack_bolt.request.internals.parse_body makes of `body`, or BodyRefused."""
    if not body:
        raise BodyRefused("the body is empty")
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise BodyRefused("the body is not UTF-8") from None
    if content_type.split(";")[0] == JSON or text.startswith("{"):  # Bolt's own rule, to the letter
        return _json_object(text, "the JSON body")
    fields = _form_fields(text)
    if "payload" not in text:  # Bolt looks for the word anywhere in the raw body
        return fields
    return _json_object(fields["payload"], "the payload field") if "payload" in fields else {}


def signed(verifier: SignatureVerifier, body: bytes, headers: Mapping[str, Any]) -> bool:
    """Slack's signature over the raw bytes, within slack-sdk's five minutes of now."""
    timestamp = headers.get("HTTP_X_SLACK_REQUEST_TIMESTAMP", "")
    signature = headers.get("HTTP_X_SLACK_SIGNATURE", "")
    if not (timestamp.isascii() and timestamp.isdigit() and signature.isascii()):
        return False  # slack-sdk would raise on them (int("²"), compare_digest of non-ASCII)
    try:
        text = body.decode()
    except UnicodeDecodeError:
        return _signed_bytes(verifier, body, timestamp, signature)
    return verifier.is_valid(body=text, timestamp=timestamp, signature=signature)


def _signed_bytes(verifier: SignatureVerifier, body: bytes, timestamp: str, signature: str) -> bool:
    """slack-sdk signs text; Slack signs bytes. The same HMAC, for a body that is not UTF-8
    (signed, it is then refused 400 rather than 401: it is Slack's, just unusable)."""
    if abs(verifier.clock.now() - int(timestamp)) > SIGNATURE_MAX_AGE_S:
        return False
    base = b"v0:" + timestamp.encode() + b":" + body
    digest = hmac.new(verifier.signing_secret.encode(), base, hashlib.sha256).hexdigest()
    return hmac.compare_digest(f"v0={digest}", signature)


def _form_fields(text: str) -> dict[str, str]:
    try:
        pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    except ValueError:
        raise BodyRefused(f"the form has more than {MAX_FORM_FIELDS} fields") from None
    fields = dict(pairs)
    if len(fields) < len(pairs):  # Bolt would keep the last of each; a reader may take the first
        twice = next(name for name in fields if sum(n == name for n, _ in pairs) > 1)
        raise BodyRefused(f"the form field {twice!r} appears more than once")
    return fields


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except RecursionError:
        raise BodyRefused(f"{what} is nested more than {MAX_JSON_DEPTH} deep") from None
    except ValueError:
        raise BodyRefused(f"{what} is not JSON") from None
    if _deeper_than(value, MAX_JSON_DEPTH):
        raise BodyRefused(f"{what} is nested more than {MAX_JSON_DEPTH} deep")
    if not isinstance(value, dict):
        raise BodyRefused(f"{what} is not a JSON object")
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Walked with a stack of its own: the value may be nested up to the recursion limit."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


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
