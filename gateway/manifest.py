"""`threadline manifest`: the Slack app manifest this gateway needs, ready to paste.

Every scope and event is here because a listener or the delivery job uses it; the reasons
sit beside them. HTTP mode points events, the command and interactivity at one request URL
(`/slack/events`); Socket Mode needs no URL.

The app is an agent (`features.agent_view`): Slack shows its sessions' status and Stop button,
and offers the suggested prompts below. `assistant_thread_started` is not subscribed: it never
fires under the agent view (which opens with `app_home_opened` on the Messages tab), and the
prompts need no event, being in the manifest.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.processes.web import EVENTS_PATH
from gateway.render.buttons import STOP_SHORTCUT
from jobs.settings import Settings

PLACEHOLDER_URL = "https://YOUR-PUBLIC-HOST"

BOT_SCOPES = {
    "app_mentions:read": "app_mention: a mention starts a session",
    "channels:history": "message.channels: follow-ups in public channel threads",
    "groups:history": "message.groups: follow-ups in private channel threads",
    "im:history": "message.im: direct messages, one session per DM thread",
    "mpim:history": "message.mpim: group DMs",
    "chat:write": "answers, cards, notices, ephemeral replies, the status line, the agent session's status",
    "commands": "the slash command",
    "files:read": "a file shared in the thread is downloaded into the session's workspace",
    "files:write": "files the agent sends (send_file), and very long answers, go out as files",
    "usergroups:read": "SLACK_OPERATORS may name user groups (S…)",
    "users:read": "users.info: guests and other organisations' people are refused by default",
    "channels:read": "conversations.members: a linked thread is for its channel's members",
    "groups:read": "conversations.members of private channels",
    "im:read": "conversations.members of DMs",
    "mpim:read": "conversations.members of group DMs",
    "assistant:write": "the agent view (agent_view below): Slack's agent entry point and split pane",
    "reactions:write": "👀 on a message the agent takes, ✅ / ⚠️ when its turn ends (SLACK_REACTIONS)",
}
BOT_EVENTS = {
    "app_mention": "a mention starts a session",
    "message.channels": "follow-ups in public channel threads",
    "message.groups": "follow-ups in private channel threads",
    "message.im": "direct messages (under the agent view, every DM is a thread: one session each)",
    "message.mpim": "group DMs",
    # Without it Slack shows no Stop button on a `processing` session (and warns
    # missing_agent_session_stopped_event_subscription on every agents.sessions.setStatus).
    "agent_session_stopped": "Slack's own Stop button on a working session: it cancels the turn",
}
# Pre-written prompts Slack offers in the agent view: a title and the message it sends (Slack
# takes at most four). They ask for what the agent does; the last one the demo model answers.
SUGGESTED_PROMPTS = (
    {"title": "Fix a failing test", "message": "Find out why the tests fail and fix the cause"},
    {"title": "Explain the code", "message": "Explain how this repository is organised"},
    {"title": "Review the last change", "message": "Review the latest commit and list the risks"},
    {"title": "List the files", "message": "list the files"},
)


def manifest(settings: Settings, *, request_url: str | None, socket: bool, name: str) -> dict[str, Any]:
    url = f"{(request_url or PLACEHOLDER_URL).rstrip('/')}{EVENTS_PATH}"
    command: dict[str, Any] = {
        "command": settings.SLACK_COMMAND,
        "description": "Stop, resume or inspect the agent's sessions",
        "usage_hint": "cancel|resume|status|compact|help [thread link]",
        "should_escape": False,
    }
    events: dict[str, Any] = {"bot_events": list(BOT_EVENTS)}
    interactivity: dict[str, Any] = {"is_enabled": True}
    if not socket:
        command["url"] = url
        events["request_url"] = url
        interactivity["request_url"] = url
    return {
        "_metadata": {"major_version": 2, "minor_version": 1},
        "display_information": {
            "name": name,
            "description": "A coding agent that works in Slack threads",
        },
        "features": {
            "app_home": {"messages_tab_enabled": True, "messages_tab_read_only_enabled": False},
            "bot_user": {"display_name": name, "always_online": True},
            "slash_commands": [command],
            "shortcuts": [
                {
                    "name": "Stop agent run",
                    "type": "message",
                    "callback_id": STOP_SHORTCUT,
                    "description": "Stop the agent working in this message's thread",
                }
            ],
            "agent_view": {
                "agent_description": "Mention me in a thread or DM me a task; reply in the thread to steer.",
                "suggested_prompts": [dict(prompt) for prompt in SUGGESTED_PROMPTS],
            },
        },
        "oauth_config": {"scopes": {"bot": sorted(BOT_SCOPES)}},
        "settings": {
            "event_subscriptions": events,
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": socket,
            "token_rotation_enabled": False,
        },
    }


def manifest_json(settings: Settings, *, request_url: str | None, socket: bool, name: str) -> str:
    return json.dumps(manifest(settings, request_url=request_url, socket=socket, name=name), indent=2)
