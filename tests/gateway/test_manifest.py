from __future__ import annotations

import json
import subprocess

import pytest
from jsonschema import Draft7Validator

from gateway.manifest import BOT_EVENTS, manifest
from gateway.sandbox.stack import SOURCE_ROOT, THREADLINE
from jobs.settings import Settings
from tests.gateway.slack_manifest_schema import MANIFEST_SCHEMA

LISTENED_EVENTS = {"app_mention", "message", "agent_session_stopped"}


def test_http_manifest_points_events_command_and_interactivity_at_one_url():
    found = manifest(
        Settings(SLACK_COMMAND="/tl"), request_url="https://bot.example.com/", socket=False, name="tl"
    )
    url = "https://bot.example.com/slack/events"
    assert found["settings"]["event_subscriptions"]["request_url"] == url
    assert found["settings"]["interactivity"] == {"is_enabled": True, "request_url": url}
    assert found["features"]["slash_commands"][0]["command"] == "/tl"
    assert found["features"]["slash_commands"][0]["url"] == url
    assert found["features"]["shortcuts"][0]["callback_id"] == "tl_stop_run"
    assert found["settings"]["socket_mode_enabled"] is False


def test_socket_manifest_has_no_urls():
    found = manifest(Settings(), request_url=None, socket=True, name="threadline")
    assert "request_url" not in found["settings"]["event_subscriptions"]
    assert "url" not in found["features"]["slash_commands"][0]
    assert found["settings"]["socket_mode_enabled"] is True


def test_every_event_a_listener_handles_is_subscribed_with_its_scope():
    subscribed = {event.split(".")[0] for event in BOT_EVENTS}
    assert subscribed == LISTENED_EVENTS
    scopes = set(
        manifest(Settings(), request_url=None, socket=True, name="x")["oauth_config"]["scopes"]["bot"]
    )
    needed = {"app_mentions:read", "channels:history", "im:history", "chat:write", "commands", "files:write"}
    assert needed | {"usergroups:read"} <= scopes


def test_the_command_prints_the_manifest_as_json():
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(SOURCE_ROOT)}
    result = subprocess.run(
        [THREADLINE, "manifest", "--socket"], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(result.stdout)["settings"]["socket_mode_enabled"] is True


@pytest.mark.parametrize("socket", [False, True])
def test_the_manifest_is_valid_under_slacks_manifest_schema(socket):
    found = manifest(
        Settings(),
        request_url="https://bot.example.com/" if not socket else None,
        socket=socket,
        name="x" * 35,
    )
    errors = [
        f"{list(e.absolute_path)}: {e.message}" for e in Draft7Validator(MANIFEST_SCHEMA).iter_errors(found)
    ]
    assert errors == []


def test_the_schema_refuses_what_slack_refuses():
    """The schema is not a rubber stamp: the mistakes Slack rejects on paste fail it."""
    good = manifest(Settings(), request_url=None, socket=True, name="threadline")
    validator = Draft7Validator(MANIFEST_SCHEMA)
    broken = [
        {**good, "display_information": {"name": "n" * 36}},
        {**good, "features": {**good["features"], "agent_view": {"suggested_prompts": [{"title": "t"}] * 5}}},
        {**good, "features": {**good["features"], "assistant_veiw": {}}},
        {**good, "settings": {**good["settings"], "event_subscriptions": {"bot_events": ["x", "x"]}}},
    ]
    assert all(not validator.is_valid(candidate) for candidate in broken)


def test_the_agent_view_offers_suggested_prompts_and_no_assistant_events():
    found = manifest(Settings(), request_url=None, socket=True, name="threadline")
    prompts = found["features"]["agent_view"]["suggested_prompts"]
    assert 1 <= len(prompts) <= 4 and all(p["title"] and p["message"] for p in prompts)
    events = found["settings"]["event_subscriptions"]["bot_events"]
    assert "agent_session_stopped" in events
    assert not [event for event in events if event.startswith("assistant_thread_")]
