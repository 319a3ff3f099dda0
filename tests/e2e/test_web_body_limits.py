"""Hostile bodies at the real `web` process: sized before they are read, signed before they are
parsed, parsed once with limits, and never a 5xx.

Unsigned requests get 401 whatever they hold (only the size and framing are answered first:
they are known before a byte of the body is read); signed ones get a 4xx naming the problem.
"""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import quote

import pytest

from gateway.sandbox.signing import signed_headers
from gateway.sandbox.stack import SIGNING_SECRET, Stack

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
MIB = 1024 * 1024
DEEP = 2000  # past Python's recursion limit (1,000), which json.loads runs into
FAST_S = 3.0  # an answer that did not wait for the rest of the body, or chew on it


def post(web: Stack, body: bytes, content_type: str | None, *, sign: bool):
    headers = {"Content-Type": content_type} if content_type else {}
    if sign:
        headers.update(signed_headers(SIGNING_SECRET, body))
    return web.client.post("/slack/events", content=body, headers=headers)


def click(action_id: str) -> dict:
    return {
        "type": "block_actions",
        "user": {"id": "U1"},
        "team": {"id": "T111"},
        "actions": [{"action_id": action_id, "value": "x"}],
    }


NESTED = {
    "json list": (b"[" * DEEP + b"]" * DEEP, JSON),
    "json list never closed": (b"[" * DEEP, JSON),
    "json object": (b'{"a":' * DEEP + b"1" + b"}" * DEEP, JSON),
    "form payload": (b"payload=" + quote('{"a":' * DEEP + "1" + "}" * DEEP).encode(), FORM),
    "form payload of brackets": (b"payload=" + b"%5B" * DEEP, FORM),
}


@pytest.mark.parametrize("name", list(NESTED))
def test_deeply_nested_bodies_are_refused_not_crashed_on(web: Stack, name: str):
    body, content_type = NESTED[name]
    assert post(web, body, content_type, sign=False).status_code == 401
    signed = post(web, body, content_type, sign=True)
    assert signed.status_code == 400, signed.text
    assert "nested" in signed.json()["error"]


def test_a_body_over_the_cap_is_refused_before_it_is_read(web: Stack):
    """The client declares 2 MiB and sends 4 KiB, then waits: only a server that answers from the
    Content-Length alone, without waiting for (or reading) the rest, replies at all."""
    head = (
        f"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {JSON}\r\n"
        f"Content-Length: {2 * MIB}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", web.port), timeout=FAST_S) as sock:
        sock.sendall(head + b"[" * 4096)
        started = time.monotonic()
        reply = sock.recv(4096)  # a server that reads on waits for the other 2 MiB: a timeout
    assert reply.startswith(b"HTTP/1.1 413 "), reply
    assert time.monotonic() - started < FAST_S


def test_a_body_of_exactly_the_cap_is_read(web: Stack):
    challenge = {"type": "url_verification", "token": "t", "challenge": "c-at-the-cap", "pad": ""}
    challenge["pad"] = "x" * (MIB - len(json.dumps(challenge)))
    body = json.dumps(challenge).encode()
    assert len(body) == MIB
    response = post(web, body, JSON, sign=True)
    assert response.status_code == 200 and "c-at-the-cap" in response.text


def test_a_body_without_a_length_is_refused(web: Stack):
    body = json.dumps({"type": "url_verification", "token": "t", "challenge": "chunked"}).encode()
    headers = {"Content-Type": JSON, **signed_headers(SIGNING_SECRET, body)}
    response = web.client.post("/slack/events", content=iter([body]), headers=headers)  # chunked
    assert response.request.headers.get("Transfer-Encoding") == "chunked"
    assert response.status_code in (400, 411), response.text


def test_a_huge_field_count_is_refused_quickly(web: Stack):
    body = b"a=1&" * 100_000
    assert post(web, body, FORM, sign=False).status_code == 401
    started = time.monotonic()
    signed = post(web, body, FORM, sign=True)
    assert signed.status_code == 400, signed.text
    assert "fields" in signed.json()["error"]
    assert time.monotonic() - started < FAST_S


def test_a_form_with_two_payloads_is_refused(web: Stack):
    """Bolt reads the last `payload`; a check that reads the first would pass what Bolt never saw."""
    first, last = json.dumps(click("zz")), json.dumps(click("yy"))
    body = f"payload={quote(first)}&payload={quote(last)}".encode()
    response = post(web, body, FORM, sign=True)
    assert response.status_code == 400, response.text
    assert "payload" in response.json()["error"]


CONTENT_TYPES = {
    "text/plain": "text/plain",
    "multipart": "multipart/form-data; boundary=x",
    "none": None,
}


@pytest.mark.parametrize("name", list(CONTENT_TYPES))
def test_a_body_of_another_content_type_is_refused(web: Stack, name: str):
    body = json.dumps({"type": "url_verification", "token": "t", "challenge": "typed"}).encode()
    assert post(web, body, CONTENT_TYPES[name], sign=False).status_code == 401
    signed = post(web, body, CONTENT_TYPES[name], sign=True)
    assert signed.status_code in (400, 415), signed.text
    assert "typed" not in signed.text


def test_a_multipart_form_is_refused(web: Stack):
    body = (
        b'--x\r\nContent-Disposition: form-data; name="payload"\r\n\r\n'
        + json.dumps(click("zz")).encode()
        + b"\r\n--x--\r\n"
    )
    signed = post(web, body, "multipart/form-data; boundary=x", sign=True)
    assert signed.status_code in (400, 415), signed.text


ODD_HEADERS = {
    "a signature that is not ASCII": {"X-Slack-Signature": "v0=é".encode("latin-1")},
    "a timestamp of a superscript digit": {"X-Slack-Request-Timestamp": "²".encode("latin-1")},
}


@pytest.mark.parametrize("name", list(ODD_HEADERS))
def test_odd_signature_headers_are_unauthorised(web: Stack, name: str):
    body = json.dumps({"type": "url_verification", "token": "t", "challenge": "odd"}).encode()
    headers = {"Content-Type": JSON, **signed_headers(SIGNING_SECRET, body), **ODD_HEADERS[name]}
    response = web.client.post("/slack/events", content=body, headers=headers)
    assert response.status_code == 401, response.text


def test_a_signed_body_that_is_not_utf8_is_refused_as_unreadable(web: Stack):
    body = b'{"type": "url_verification", "challenge": "\xff"}'
    assert post(web, body, JSON, sign=False).status_code == 401
    signed = post(web, body, JSON, sign=True)  # signed over the bytes, as Slack signs
    assert signed.status_code == 400 and "UTF-8" in signed.json()["error"], signed.text
