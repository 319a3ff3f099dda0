"""Slack thread ↔ session key, and the text a person meant once the bot mention is removed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gateway import payload
from jobs.keys import SessionKey

_LEADING_MENTION = re.compile(r"^\s*<@[A-Z0-9]+(\|[^>]*)?>[\s:,]*")


def session_key_for(
    team: str, channel: str, message: Mapping[str, Any], *, ts: str | None = None
) -> SessionKey:
    """The session of the thread `message` is in.

    A thread is identified by its root: `thread_ts` for replies, the message's own ts otherwise
    (`ts` when the payload gives it beside the message, as `message_deleted` does).
    """
    own_ts = ts or payload.text(message, "ts")
    return payload.session_key(team, channel, payload.optional_text(message, "thread_ts") or own_ts)


def strip_bot_mention(text: str, bot_user_id: str | None) -> str:
    if bot_user_id:
        text = (
            text.replace(f"<@{bot_user_id}>", " ", 1)
            if text.lstrip().startswith(f"<@{bot_user_id}>")
            else text
        )
        return text.strip()
    return _LEADING_MENTION.sub("", text, count=1).strip()
