"""What the fake Slack remembers: the workspace's messages, and everything said to it.

Messages live per channel by ts, with threads, edits and deletes, so a test (or the sandbox
page) sees what a person would see in the thread. The fields are public on purpose: a test
reads what was posted and lowers a limit to make the fake refuse like Slack does; every
reader and writer holds `lock`, since the HTTP server answers from many threads.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

MAX_TEXT_CHARS = 40_000  # Slack truncates beyond this; we refuse, so a test notices
MAX_BLOCKS = 50
MAX_SECTION_CHARS = 3_000
MAX_MARKDOWN_BLOCK_CHARS = 12_000

BOT_USER_ID = "UBOT0001"
BOT_ID = "BBOT0001"
TEAM_ID = "T111"
APP_TOKEN = "xapp-sandbox-token"
# Who is in a channel nobody declared: the bot and the people tests usually speak as.
DEFAULT_MEMBERS = ("W111", "W222", "W333", "W444", "W555", "W777", "W999", "U111", "U222", BOT_USER_ID)

Message = dict[str, Any]


class SlackError(Exception):
    """A Web API error: answered as `{"ok": false, "error": error, **extra}` with HTTP `status`
    (`extra` as Slack adds it, e.g. `response_metadata.messages` naming the argument at fault)."""

    def __init__(self, error: str, status: int = 200, extra: dict[str, Any] | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.status = status
        self.extra = extra or {}


@dataclass
class Fault:
    """Answer the next `count` calls of `method` with this instead of doing the work."""

    method: str
    count: int = 1
    status: int = 200
    error: str | None = None
    retry_after: int | None = None
    delay_s: float = 0.0
    # Do the work, then wait `delay_s` before answering (normally): a post that succeeded but
    # whose answer the caller may never read.
    after_work: bool = False
    # More fields for the error answer, as Slack sends them (`response_metadata`, `warning` …).
    extra: dict[str, Any] = field(default_factory=dict)
    # Close the connection without answering: Slack unreachable for the caller.
    hang_up: bool = False


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    at: float
    outcome: str


@dataclass
class SlackState:
    bot_token: str
    messages: dict[str, dict[str, Message]] = field(default_factory=dict)  # channel → ts → message
    ephemeral: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    # "channel:thread_ts" → an agent session: its status, title, initiator and every status set.
    agent_sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    # False: the app is not an agent (no `agent_view` in its manifest); agents.sessions.* refuse.
    agent_view: bool = True
    responses: list[dict[str, Any]] = field(default_factory=list)  # posts to response_url
    uploads: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    usergroups: dict[str, list[str]] = field(default_factory=dict)  # S… → member user ids
    # User id → what users.info says beyond a full member of TEAM_ID (team_id, is_restricted …).
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Channel → its members, in join order; a channel not here has DEFAULT_MEMBERS.
    channel_members: dict[str, list[str]] = field(default_factory=dict)
    uploaded: dict[str, bytes] = field(default_factory=dict)  # file id → bytes sent to upload_url
    # Files people shared (FakeSlack.share_file): id → (name, mimetype, bytes), served at url_private.
    shared: dict[str, tuple[str, str, bytes]] = field(default_factory=dict)
    downloads: list[tuple[str, bool]] = field(default_factory=list)  # (file id, with the bot token)
    # Slack refuses some messages as msg_too_long well below its documented limits; a test
    # can lower these to make the fake do the same.
    text_limit: int = MAX_TEXT_CHARS
    markdown_limit: int = MAX_MARKDOWN_BLOCK_CHARS
    app_token: str = APP_TOKEN
    # The bot token's scopes, sent as Slack does in `x-oauth-scopes` on every answer; None: what
    # threadline's manifest asks for (the app installed as `threadline manifest` describes it).
    granted_scopes: list[str] | None = None
    # The bot events the app subscribes to; None: what threadline's manifest subscribes.
    bot_events: list[str] | None = None
    # Channels where chat.startStream answers method_not_supported_for_channel_type ("*": all).
    streaming_refused: set[str] = field(default_factory=set)
    lock: threading.RLock = field(default_factory=threading.RLock)
    _clock: Iterator[int] = field(default_factory=lambda: itertools.count(1), repr=False)

    # -- messages ----------------------------------------------------------------------

    def next_ts(self) -> str:
        """A fresh message ts, later than every earlier one."""
        return f"{int(time.time())}.{next(self._clock):06d}"

    def store(self, message: Message) -> Message:
        """Keep a new message, counting it as a reply of its thread's root."""
        with self.lock:
            self.messages.setdefault(message["channel"], {})[message["ts"]] = message
            root = message.get("thread_ts")
            if root and root != message["ts"]:
                parent = self.messages[message["channel"]].get(root)
                if parent is not None:
                    parent["reply_count"] = parent.get("reply_count", 0) + 1
        return message

    def message(self, channel: str, ts: str) -> Message:
        """The live message itself (for editing, under `lock`); Slack's error when there is none."""
        message = self.messages.get(channel, {}).get(ts)
        if message is None or message.get("deleted"):
            raise SlackError("message_not_found")
        return message

    def thread(self, channel: str, thread_ts: str, *, include_deleted: bool = False) -> list[Message]:
        """The thread as shown: its root and replies in ts order, after edits and deletes."""
        with self.lock:
            shown = [
                dict(message)
                for message in self.messages.get(channel, {}).values()
                if (message["ts"] == thread_ts or message.get("thread_ts") == thread_ts)
                and (include_deleted or not message.get("deleted"))
            ]
        return sorted(shown, key=lambda message: _ts_key(message["ts"]))

    def channel_messages(self, channel: str) -> list[Message]:
        with self.lock:
            shown = [dict(m) for m in self.messages.get(channel, {}).values() if not m.get("deleted")]
        return sorted(shown, key=lambda message: _ts_key(message["ts"]))

    def all_messages(self) -> list[Message]:
        with self.lock:
            channels = list(self.messages)
        return [message for channel in channels for message in self.channel_messages(channel)]

    # -- calls and faults --------------------------------------------------------------

    def take_fault(self, method: str) -> Fault | None:
        """The scripted fault for this call of `method`, if one is left (it is used up)."""
        with self.lock:
            for fault in self.faults:
                if fault.method in (method, "*") and fault.count > 0:
                    fault.count -= 1
                    return fault
        return None

    def clear_faults(self) -> None:
        """Slack is well again: every scripted fault still pending is dropped."""
        with self.lock:
            self.faults.clear()

    def record_call(self, method: str, args: dict[str, Any], outcome: str) -> None:
        with self.lock:
            self.calls.append(Call(method=method, args=args, at=time.time(), outcome=outcome))

    def calls_of(self, method: str | None = None) -> list[Call]:
        with self.lock:
            return [call for call in self.calls if method is None or call.method == method]


def _ts_key(ts: str) -> tuple[int, int]:
    """A Slack ts as a sort key: seconds, then the sequence after the dot."""
    seconds, _, fraction = ts.partition(".")
    return int(seconds), int(fraction or 0)
