"""Slack's app manifest schema, as far as the fields threadline emits (JSON Schema, draft 7).

Written here from the facts of Slack's own published schema, slackapi/manifest-schema,
`schemas/manifest.schema.2.0.0.json` at commit c50cfa8 (2026): every object there is closed
(`additionalProperties: false`), so a misspelt or invented key fails here as it fails when the
manifest is pasted; the limits (lengths, counts, enums, URL patterns) are Slack's. Only the
parts threadline uses are spelt out; a field it starts to emit must be added here, from that
schema, or the test fails on it.
"""

from __future__ import annotations

from typing import Any


def _closed(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _text(low: int, high: int) -> dict[str, Any]:
    return {"type": "string", "minLength": low, "maxLength": high}


_URL = {"type": "string", "pattern": r"^https?:\/\/", "maxLength": 3000}
_BOOL = {"type": "boolean"}
_SCOPES = {"type": "array", "maxItems": 255, "items": {"type": "string", "maxLength": 50}}
_EVENTS = {
    "type": "array",
    "maxItems": 100,
    "uniqueItems": True,
    "items": {"type": "string", "maxLength": 50},
}

_SLASH_COMMAND = _closed(
    {
        "command": {"type": "string", "pattern": r"^\/", "minLength": 2, "maxLength": 32},
        "url": _URL,
        "description": _text(1, 2000),
        "usage_hint": _text(1, 1000),
        "should_escape": _BOOL,
    },
    "command",
    "description",
)
_SHORTCUT = _closed(
    {
        "name": _text(1, 24),
        "type": {"type": "string", "enum": ["message", "global"]},
        "callback_id": _text(1, 255),
        "description": _text(1, 150),
    },
    "name",
    "type",
    "callback_id",
    "description",
)
_AGENT_VIEW = _closed(
    {
        "agent_description": {"type": "string", "maxLength": 300},
        "suggested_prompts": {
            "type": "array",
            "maxItems": 4,
            "items": _closed(
                {"title": {"type": "string"}, "message": {"type": "string"}}, "title", "message"
            ),
        },
    }
)
_FEATURES = _closed(
    {
        "app_home": _closed(
            {
                "home_tab_enabled": _BOOL,
                "messages_tab_enabled": _BOOL,
                "messages_tab_read_only_enabled": _BOOL,
            }
        ),
        "bot_user": _closed({"display_name": _text(1, 80), "always_online": _BOOL}, "display_name"),
        "slash_commands": {"type": "array", "minItems": 1, "maxItems": 50, "items": _SLASH_COMMAND},
        "shortcuts": {"type": "array", "minItems": 1, "maxItems": 10, "items": _SHORTCUT},
        "agent_view": _AGENT_VIEW,
    }
)
_SETTINGS = _closed(
    {
        "event_subscriptions": _closed({"request_url": {**_URL, "maxLength": 3500}, "bot_events": _EVENTS}),
        "interactivity": _closed(
            {"is_enabled": _BOOL, "request_url": {**_URL, "maxLength": 3500}}, "is_enabled"
        ),
        "org_deploy_enabled": _BOOL,
        "socket_mode_enabled": _BOOL,
        "token_rotation_enabled": _BOOL,
    }
)
MANIFEST_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    **_closed(
        {
            "_metadata": _closed(
                {"major_version": {"type": "integer"}, "minor_version": {"type": "integer"}}
            ),
            "display_information": _closed(
                {"name": _text(1, 35), "description": _text(1, 140), "long_description": _text(175, 4000)},
                "name",
            ),
            "features": _FEATURES,
            "oauth_config": _closed({"scopes": _closed({"bot": _SCOPES, "user": _SCOPES})}),
            "settings": _SETTINGS,
        },
        "display_information",
    ),
}
