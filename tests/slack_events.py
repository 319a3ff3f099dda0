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
) -> dict[str, Any]:
    body = sample_event("app_mention_top_level")
    body["team_id"] = team
    body["event_id"] = event_id or f"Ev{next(_ids):08d}"
    event = body["event"]
    event.update(text=f"<@{BOT_USER_ID}> {text}", ts=ts, event_ts=ts, channel=channel, user=user, team=team)
    if thread_ts:
        event["thread_ts"] = thread_ts
    body["authorizations"] = [{"team_id": team, "user_id": BOT_USER_ID, "is_bot": True}]
    return body
