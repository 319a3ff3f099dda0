"""Sign requests to /slack/events exactly as Slack does (slack-sdk's own signature code)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any
from urllib.parse import quote, urlencode

from slack_sdk.signature import SignatureVerifier


def signed_headers(secret: str, body: bytes | str, timestamp: int | None = None) -> dict[str, str]:
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    if isinstance(body, str) or _is_utf8(body):
        raw = body.decode() if isinstance(body, bytes) else body
        signed = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=raw)
        assert signed is not None  # slack-sdk answers None only when given no timestamp
        signature = signed
    else:  # slack-sdk signs text; Slack signs whatever bytes it sends, so fuzzing needs this too
        digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256).hexdigest()
        signature = f"v0={digest}"
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature}


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode()
    except UnicodeDecodeError:
        return False
    return True


def event_request(secret: str, payload: dict[str, Any], **sign: Any) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload).encode()
    return body, {"Content-Type": "application/json", **signed_headers(secret, body, **sign)}


def form_request(secret: str, fields: dict[str, str], **sign: Any) -> tuple[bytes, dict[str, str]]:
    body = urlencode(fields).encode()
    return body, {"Content-Type": "application/x-www-form-urlencoded", **signed_headers(secret, body, **sign)}


def interaction_request(secret: str, payload: dict[str, Any], **sign: Any) -> tuple[bytes, dict[str, str]]:
    body = ("payload=" + quote(json.dumps(payload))).encode()
    return body, {"Content-Type": "application/x-www-form-urlencoded", **signed_headers(secret, body, **sign)}
