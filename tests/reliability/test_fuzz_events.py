"""Fuzzing /slack/events with valid signatures over mutated real payloads (hypothesis).

Every request is signed exactly as Slack signs it, so it reaches the listeners. Whatever the
payload: never a 5xx, the web process never dies, and a payload made invalid records nothing.
"""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import quote, urlencode

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.sandbox.signing import signed_headers
from gateway.sandbox.stack import SIGNING_SECRET, Stack
from tests.e2e.test_bad_input import recorded
from tests.slack_events import samples

EVENT_SAMPLES = [
    body["body"] for body in samples()["events_api"].values() if isinstance(body, dict) and "body" in body
]
INTERACTION_SAMPLES = [item["payload"] for item in samples()["interactivity"].values() if "payload" in item]
COMMAND_FIELDS = {**samples()["slash_commands"]["form_body"]["decoded"], "command": "/agent"}
WEIRD_TEXT = st.one_of(
    st.text(max_size=50),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1000, max_size=4000),
    st.just("x" * 300_000),
    st.sampled_from(["<@UBOT0001>", "!stop", "!resume", "\u202e\u0000", "😀" * 500, "```", "<!channel>"]),
)
WEIRD_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), WEIRD_TEXT,
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)  # fmt: skip
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path into nested dicts (lists are treated as leaves)."""
    found = []
    if isinstance(value, dict):
        for key, inner in value.items():
            found.append((*prefix, key))
            found.extend(paths(inner, (*prefix, key)))
    return found


def mutate(body: dict, path: tuple, how: str, replacement: Any) -> dict:
    body = copy.deepcopy(body)
    target = body
    for key in path[:-1]:
        target = target[key]
    if how == "drop":
        target.pop(path[-1], None)
    else:
        target[path[-1]] = replacement
    return body


def post(web: Stack, body: bytes, content_type: str):
    headers = {"Content-Type": content_type, **signed_headers(SIGNING_SECRET, body)}
    return web.client.post("/slack/events", content=body, headers=headers)


def test_a_list_or_an_object_where_slack_sends_text_never_gets_a_5xx(web: Stack):
    """What the fuzz once drew (an event's `"subtype": []`, looked up in a set: unhashable), for
    every text field of every sample event and click."""
    for sample, encode in [
        *((body, _as_json) for body in EVENT_SAMPLES),
        *((payload, _as_form) for payload in INTERACTION_SAMPLES),
    ]:
        for path in paths(sample):
            if not isinstance(_at(sample, path), str):
                continue
            for odd in ([], {}, [1]):
                response = post(web, *encode(mutate(sample, path, "replace", odd)))
                assert response.status_code < 500, (path, odd, response.text)
    assert web.processes["web"].poll() is None


def _as_json(body: dict) -> tuple[bytes, str]:
    return json.dumps(body).encode(), "application/json"


def _as_form(payload: dict) -> tuple[bytes, str]:
    return ("payload=" + quote(json.dumps(payload))).encode(), "application/x-www-form-urlencoded"


def _at(body: dict, path: tuple) -> Any:
    for key in path:
        body = body[key]
    return body


@FUZZ
@given(data=st.data())
def test_mutated_events_never_get_a_5xx(web: Stack, data):
    body = data.draw(st.sampled_from(EVENT_SAMPLES))
    path = data.draw(st.sampled_from(paths(body)))
    how = data.draw(st.sampled_from(["drop", "replace"]))
    mutated = mutate(body, path, how, data.draw(WEIRD_VALUE))
    response = post(web, json.dumps(mutated).encode(), "application/json")
    assert response.status_code < 500, (path, how, response.text)
    assert web.processes["web"].poll() is None


@FUZZ
@given(data=st.data())
def test_mentions_missing_what_a_session_needs_record_nothing(web: Stack, redis, data):
    body = copy.deepcopy(samples()["events_api"]["app_mention_top_level"]["body"])
    body["event_id"] = f"EvFuzz{data.draw(st.integers(0, 10**9))}"
    broken = data.draw(
        st.sampled_from([("event", "channel"), ("event", "ts"), ("event",), ("event", "type")])
    )
    how = data.draw(st.sampled_from(["drop", "replace"]))
    value = data.draw(
        st.one_of(st.none(), st.integers(), st.lists(st.integers(), max_size=2), st.just("C:1"))
    )
    before = recorded(redis)
    response = post(web, json.dumps(mutate(body, broken, how, value)).encode(), "application/json")
    assert response.status_code < 500
    assert recorded(redis) == before


@FUZZ
@given(data=st.data())
def test_mutated_clicks_and_commands_never_get_a_5xx(web: Stack, data):
    if data.draw(st.booleans()):
        payload = data.draw(st.sampled_from(INTERACTION_SAMPLES))
        mutated = mutate(
            payload, data.draw(st.sampled_from(paths(payload))), "replace", data.draw(WEIRD_VALUE)
        )
        body = ("payload=" + quote(json.dumps(mutated))).encode()
    else:
        fields = dict(COMMAND_FIELDS)
        field = data.draw(st.sampled_from(sorted(fields)))
        fields[field] = data.draw(WEIRD_TEXT)
        body = urlencode(fields).encode()
    response = post(web, body, "application/x-www-form-urlencoded")
    assert response.status_code < 500
    assert web.processes["web"].poll() is None


@FUZZ
@given(
    raw=st.binary(max_size=2000),
    content_type=st.sampled_from(["application/json", "application/x-www-form-urlencoded"]),
)
def test_arbitrary_signed_bytes_never_get_a_5xx(web: Stack, raw: bytes, content_type: str):
    response = post(web, raw, content_type)
    assert response.status_code < 500
