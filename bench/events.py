"""The signed-event bodies benchmarks send: a person mentioning the bot, as Slack delivers it."""

from __future__ import annotations

import time
from typing import Any

from gateway.sandbox.fake_slack import BOT_USER_ID, TEAM_ID


def app_mention(ts: str, channel: str, words: str, event_id: str, user: str = "W222") -> dict[str, Any]:
    """An `event_callback` for `@bot <words>` posted at `ts` in `channel` by `user`."""
    event = {
        "type": "app_mention",
        "text": f"<@{BOT_USER_ID}> {words}",
        "user": user,
        "ts": ts,
        "channel": channel,
        "event_ts": ts,
        "team": TEAM_ID,
    }
    return {
        "team_id": TEAM_ID,
        "api_app_id": "A111",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "event": event,
    }
