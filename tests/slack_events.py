"""Slack payloads for tests, built from the real samples in tests/data/slack_payloads.json."""

from __future__ import annotations

import copy
import itertools
import json
from functools import cache
from pathlib import Path
from typing import Any

from gateway.sandbox.fake_slack import BOT_USER_ID, TEAM_ID

_ids = itertools.count(1)


@cache
def samples() -> dict[str, Any]:
    return json.loads((Path(__file__).parent / "data" / "slack_payloads.json").read_text())


def sample_event(name: str) -> dict[str, Any]:
    return copy.deepcopy(samples()["events_api"][name]["body"])


def mention(
    text: str,
    *,
    ts: str,
    channel: str = "C111",
    user: str = "W222",
    thread_ts: str | None = None,
    team: str = TEAM_ID,
    event_id: str | None = None,
    files: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An `app_mention`; `files` as FakeSlack.share_file describes them (Slack's file objects)."""
    body = sample_event("app_mention_top_level")
    body["team_id"] = team
    body["event_id"] = event_id or f"Ev{next(_ids):08d}"
    event = body["event"]
    event.update(text=f"<@{BOT_USER_ID}> {text}", ts=ts, event_ts=ts, channel=channel, user=user, team=team)
    if thread_ts:
        event["thread_ts"] = thread_ts
    if files:
        event["files"] = files
    body["authorizations"] = [{"team_id": team, "user_id": BOT_USER_ID, "is_bot": True}]
    return body


def _event_ts(after: str) -> str:
    """A ts of its own for an edit or delete event, later than the message it changes."""
    return f"{int(float(after)) + 1}.{next(_ids):06d}"


def _next_event_id() -> str:
    return f"Ev{next(_ids):08d}"


def message(
    text: str,
    *,
    ts: str,
    channel: str = "C111",
    user: str = "W222",
    thread_ts: str | None = None,
    team: str = TEAM_ID,
    event_id: str | None = None,
    channel_type: str = "channel",
    **extra: Any,
) -> dict[str, Any]:
    """A `message` event as Slack sends it for a thread reply (or a DM with channel_type="im")."""
    body = sample_event("message_thread_reply_in_channel")
    body["team_id"] = team
    body["event_id"] = event_id or _next_event_id()
    body["authorizations"] = [{"team_id": team, "user_id": BOT_USER_ID, "is_bot": True}]
    event = body["event"]
    event.update(
        text=text, ts=ts, event_ts=ts, channel=channel, user=user, team=team, channel_type=channel_type
    )
    event.pop("thread_ts", None)
    event.pop("parent_user_id", None)
    if thread_ts:
        event["thread_ts"] = thread_ts
    event.update(extra)
    return body


def message_changed(
    new_text: str, *, ts: str, old_text: str, thread_ts: str, channel: str = "C111", user: str = "W222"
) -> dict[str, Any]:
    body = sample_event("message_changed")
    body["team_id"] = TEAM_ID
    body["event_id"] = _next_event_id()
    event = body["event"]
    event["channel"] = channel
    event["ts"] = event["event_ts"] = _event_ts(ts)
    event["message"].update(text=new_text, user=user, ts=ts, thread_ts=thread_ts, team=TEAM_ID)
    event["message"].pop("blocks", None)
    event["previous_message"].update(text=old_text, user=user, ts=ts, thread_ts=thread_ts)
    event["previous_message"].pop("blocks", None)
    return body


def message_deleted(
    *, ts: str, text: str, thread_ts: str, channel: str = "C111", user: str = "W222"
) -> dict[str, Any]:
    body = sample_event("message_deleted")
    body["team_id"] = TEAM_ID
    body["event_id"] = _next_event_id()
    event = body["event"]
    event.update(channel=channel, deleted_ts=ts)
    event["ts"] = event["event_ts"] = _event_ts(ts)
    event["previous_message"].update(text=text, user=user, ts=ts, thread_ts=thread_ts)
    return body


def command(
    text: str,
    *,
    user: str = "W222",
    channel: str = "C111",
    team: str = TEAM_ID,
    response_url: str,
    name: str = "/agent",
    trigger_id: str | None = None,
) -> dict[str, str]:
    """A slash command; each has a trigger id of its own unless the test replays one."""
    fields = dict(samples()["slash_commands"]["form_body"]["decoded"])
    fields.update(
        text=text, user_id=user, channel_id=channel, team_id=team, command=name, response_url=response_url,
        trigger_id=trigger_id or f"{next(_ids)}.111.trigger",
    )  # fmt: skip
    return fields


def block_action(
    action_id: str,
    value: str,
    *,
    user: str = "W222",
    channel: str = "C111",
    message_ts: str = "1700000000.000001",
    team: str = TEAM_ID,
    response_url: str,
    action_ts: str | None = None,
) -> dict[str, Any]:
    """A click; each has an action_ts of its own unless the test replays one."""
    payload = copy.deepcopy(samples()["interactivity"]["block_actions_button"]["payload"])
    payload["user"].update(id=user, team_id=team)
    payload["team"]["id"] = team
    payload["channel"]["id"] = channel
    payload["container"].update(channel_id=channel, message_ts=message_ts, is_ephemeral=False)
    payload["response_url"] = response_url
    payload["actions"][0].update(
        action_id=action_id, value=value, block_id="tl", action_ts=action_ts or f"1700000000.{next(_ids):06d}"
    )
    return payload


def message_shortcut(
    *, message_ts: str, thread_ts: str | None, user: str = "W222", channel: str = "C111", response_url: str
) -> dict[str, Any]:
    payload = copy.deepcopy(samples()["interactivity"]["message_shortcut"]["payload"])
    payload["callback_id"] = "tl_stop_run"
    payload["user"]["id"] = user
    payload["team"]["id"] = TEAM_ID
    payload["channel"]["id"] = channel
    payload["message_ts"] = message_ts
    payload["message"].update(ts=message_ts, user=user)
    if thread_ts:
        payload["message"]["thread_ts"] = thread_ts
    payload["response_url"] = response_url
    return payload


def agent_session_stopped(*, thread_ts: str, user: str = "W222", channel: str = "C111") -> dict[str, Any]:
    event = copy.deepcopy(samples()["events_api"]["agent_session_stopped_inner_event"]["event"])
    event.update(channel=channel, thread_ts=thread_ts, user=user, streaming_message_ts=[])
    return {
        "token": "verification_token",
        "team_id": TEAM_ID,
        "api_app_id": "A111",
        "event": event,
        "type": "event_callback",
        "event_id": _next_event_id(),
        "event_time": int(float(event["event_ts"])),
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
    }
