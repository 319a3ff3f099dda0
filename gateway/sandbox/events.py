"""What Slack sends the app when a person acts, built in Slack's own shapes for the sandbox page.

The shapes follow the samples in tests/data/slack_payloads.json (taken from bolt-python's own
tests): an `event_callback` envelope for `app_mention` and `message`, a `block_actions` payload
for a button click, and the form fields of a slash command.
"""

from __future__ import annotations

import itertools
import time
import uuid
from typing import Any

from gateway.sandbox.fake_slack import BOT_USER_ID, TEAM_ID

API_APP_ID = "A0SANDBOX"
VERIFICATION_TOKEN = "sandbox-verification-token"  # deprecated by Slack, still sent in every body
TEAM_DOMAIN = "sandbox"

_event_ids = itertools.count(1)


def mentions_bot(text: str) -> bool:
    return f"<@{BOT_USER_ID}>" in text


def _envelope(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": TEAM_ID,
        "api_app_id": API_APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": f"Ev{uuid.uuid4().hex[:10].upper()}{next(_event_ids)}",
        "event_time": int(time.time()),
        "authorizations": [
            {"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True, "is_enterprise_install": False}
        ],
        "is_ext_shared_channel": False,
    }


def app_mention(message: dict[str, Any]) -> dict[str, Any]:
    """The `app_mention` event Slack sends for a stored message that mentions the bot."""
    return _envelope(_event("app_mention", message))


def channel_message(message: dict[str, Any], parent_user: str | None = None) -> dict[str, Any]:
    """The `message` event (message.channels) Slack sends for every message a person posts."""
    event = {**_event("message", message), "channel_type": "channel"}
    if message.get("thread_ts") and parent_user:
        event["parent_user_id"] = parent_user
    return _envelope(event)


def _event(kind: str, message: dict[str, Any]) -> dict[str, Any]:
    event = {
        "client_msg_id": str(uuid.uuid4()),
        "type": kind,
        "text": message["text"],
        "user": message["user"],
        "ts": message["ts"],
        "team": TEAM_ID,
        "channel": message["channel"],
        "event_ts": message["ts"],
    }
    if message.get("thread_ts"):
        event["thread_ts"] = message["thread_ts"]
    if message.get("files"):  # a file_share: Slack sends the files on both events
        event["files"] = message["files"]
        if kind == "message":
            event["subtype"] = "file_share"
    return event


def events_for(message: dict[str, Any], parent_user: str | None = None) -> list[dict[str, Any]]:
    """Like Slack: a `message` event always, and an `app_mention` too when the bot is mentioned."""
    sent = [channel_message(message, parent_user)]
    if mentions_bot(message["text"]):
        sent.insert(0, app_mention(message))
    return sent


def slash_command(
    command: str, text: str, *, user: str, user_name: str, channel: str, channel_name: str, response_url: str
) -> dict[str, str]:
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": TEAM_ID,
        "team_domain": TEAM_DOMAIN,
        "channel_id": channel,
        "channel_name": channel_name,
        "user_id": user,
        "user_name": user_name,
        "command": command,
        "text": text,
        "api_app_id": API_APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": f"{int(time.time())}.{uuid.uuid4().hex[:12]}",
    }


def block_actions(
    *,
    user: str,
    user_name: str,
    channel: str,
    channel_name: str,
    message: dict[str, Any],
    action: dict[str, Any],
    block_id: str,
    response_url: str,
) -> dict[str, Any]:
    """The interactivity payload for a click on `action` (a button element) of a bot message."""
    now = f"{time.time():.6f}"
    container = {"type": "message", "message_ts": message["ts"], "channel_id": channel, "is_ephemeral": False}
    if message.get("thread_ts"):
        container["thread_ts"] = message["thread_ts"]
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user_name, "name": user_name, "team_id": TEAM_ID},
        "api_app_id": API_APP_ID,
        "token": VERIFICATION_TOKEN,
        "container": container,
        "trigger_id": f"{int(time.time())}.{uuid.uuid4().hex[:12]}",
        "team": {"id": TEAM_ID, "domain": TEAM_DOMAIN},
        "channel": {"id": channel, "name": channel_name},
        "message": message,
        "response_url": response_url,
        "actions": [
            {
                "action_id": action.get("action_id", ""),
                "block_id": block_id,
                "text": action.get("text", {"type": "plain_text", "text": ""}),
                "value": action.get("value", ""),
                "type": action.get("type", "button"),
                "action_ts": now,
            }
        ],
    }
