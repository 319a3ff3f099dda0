"""What the web process's check reads is what Bolt reads: the same bytes give the same dict.

The check parses a signed body once, with limits, before Bolt parses it again; if the two
readings could differ, a body could pass the check as one thing and reach the listeners as
another. These pin the check to Bolt's own `parse_body` on what Slack sends and on the odd
bodies where Bolt's rule is surprising.
"""

from __future__ import annotations

import json
from urllib.parse import quote, urlencode

import pytest
from slack_bolt.request.internals import parse_body

from gateway.request_shape import FORM, JSON, BodyRefused, parse_as_bolt_does
from tests.slack_events import samples

EVENTS = [item["body"] for item in samples()["events_api"].values() if "body" in item]
CLICKS = [item["payload"] for item in samples()["interactivity"].values() if "payload" in item]
COMMAND = samples()["slash_commands"]["form_body"]["decoded"]

BODIES = {
    **{f"event {i}": (json.dumps(body), JSON) for i, body in enumerate(EVENTS)},
    **{f"click {i}": ("payload=" + quote(json.dumps(p)), FORM) for i, p in enumerate(CLICKS)},
    "command": (urlencode(COMMAND), FORM),
    "command saying payload": (urlencode({**COMMAND, "text": "run the payload tests"}), FORM),
    "payload named in percent-escapes": ("%70ayload=" + quote('{"a": 1}'), FORM),
    "json sent as a form": (json.dumps({"type": "url_verification"}), FORM),
    "json with a charset": (json.dumps({"type": "url_verification"}), JSON + "; charset=utf-8"),
}


@pytest.mark.parametrize("name", list(BODIES))
def test_the_check_reads_a_body_as_bolt_does(name: str):
    text, content_type = BODIES[name]
    assert parse_as_bolt_does(text.encode(), content_type) == parse_body(text, content_type.split(";")[0])


REFUSED = {
    "a field twice": ("payload=%7B%7D&payload=" + quote('{"a": 2}'), FORM, "more than once"),
    "a command field twice": ("user_id=U1&user_id=U2", FORM, "more than once"),
    "too many fields": ("a=1&" * 65, FORM, "more than 64 fields"),
    "nested past the limit": ("[" * 65 + "]" * 65, JSON, "nested"),
    "nested past the recursion limit": ("[" * 5000, JSON, "nested"),
    "an empty payload": ("payload=", FORM, "not JSON"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_what_bolt_would_read_otherwise_or_choke_on_is_refused(name: str):
    text, content_type, reason = REFUSED[name]
    with pytest.raises(BodyRefused, match=reason):
        parse_as_bolt_does(text.encode(), content_type)


def test_nesting_up_to_the_limit_is_read():
    text = '{"a":' * 63 + "[1]" + "}" * 63
    assert parse_as_bolt_does(text.encode(), JSON) == parse_body(text, JSON)
