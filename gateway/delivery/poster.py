"""Posting into one thread exactly once per ledger entry, paced per channel.

Every post carries Slack message metadata naming its entry. If a worker dies between Slack's
answer and the ledger write, the entry stays "in flight"; the next delivery looks for a message
with that metadata in the thread (conversations.replies) before posting again.

Everything posted, edited or uploaded here goes out under the channel's `PostingRules`
(gateway.render.mentions): broadcast mentions broken, and links and media not unfurled, unless
the settings allow them in that channel. No post asks Slack to parse names (`link_names`,
`parse=full`), which would turn a bare `@channel` into a ping.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk import WebClient

from gateway.delivery.ledger import Ledger
from gateway.delivery.pacing import wait_for_post_slot
from gateway.render.mentions import PostingRules
from gateway.render.notices import SlackMessage
from jobs.session.store import SessionStore

log = logging.getLogger(__name__)

METADATA_EVENT = "threadline_notice"
LOOKBACK_S = 120  # a lost post is at most this much older than its in-flight mark (clock skew)
REPLIES_PAGE = 200


class ThreadPoster:
    def __init__(self, store: SessionStore, client: WebClient, rules: PostingRules | None = None) -> None:
        self.store = store
        self.client = client
        self.key = store.key
        self.ledger = Ledger(store)
        self.rules = rules or PostingRules()

    def post_once(self, entry: str, message: SlackMessage) -> tuple[str, bool]:
        """Post `message` for `entry` unless the thread has it already: (its ts, posted now)."""
        known = self.known(entry, lambda m: _metadata_entry(m) == entry)
        if known:
            return known, False
        self.ledger.begin(entry)
        self.pace()
        try:
            response = self.client.chat_postMessage(
                channel=self.key.channel,
                thread_ts=self.key.thread_ts,
                metadata={"event_type": METADATA_EVENT, "event_payload": {"outbox_id": entry}},
                unfurl_links=self.rules.unfurl,
                unfurl_media=self.rules.unfurl,
                **self.rules.arguments(message.arguments()),
            )
        except Exception as error:
            if _refused(error):
                self.ledger.abandon(entry)
            raise
        ts = str(response["ts"])
        self.ledger.record(entry, ts)
        log.info("posted %s in %s as %s", entry, self.key, ts)
        return ts, True

    def upload_once(
        self, entry: str, filename: str, content: str | bytes, comment: str | None, title: str | None = None
    ) -> str | None:
        """Attach `content` as a file in the thread, once; returns the ts of its message if known."""
        known = self.known(entry, lambda m: any(f.get("name") == filename for f in m.get("files") or []))
        if known:
            return known
        self.ledger.begin(entry)
        self.pace()
        self.client.files_upload_v2(
            channel=self.key.channel,
            thread_ts=self.key.thread_ts,
            content=content,
            filename=filename,
            title=self.rules.text(title or filename),
            initial_comment=self.rules.text(comment) if comment else None,  # slack_sdk leaves None out
        )
        found = self._find(lambda m: any(f.get("name") == filename for f in m.get("files") or []), 0)
        self.ledger.record(entry, found or "file")
        return found

    def update(self, ts: str, message: SlackMessage) -> None:
        self.client.chat_update(channel=self.key.channel, ts=ts, **self.rules.arguments(message.arguments()))

    def pace(self) -> None:
        wait_for_post_slot(self.store.redis, self.key.team, self.key.channel)

    def known(self, entry: str, matches: Any) -> str | None:
        """The ts of `entry`'s message: recorded, or found in the thread after a lost answer."""
        ts = self.ledger.ts(entry)
        if ts:
            return ts
        since = self.ledger.in_flight_since(entry)
        if since is None:
            return None
        found = self._find(matches, since - LOOKBACK_S)
        if found:
            log.info("found %s of %s already in the thread as %s", entry, self.key, found)
            self.ledger.record(entry, found)
        return found

    def _find(self, matches: Any, oldest: float) -> str | None:
        cursor = None
        while True:
            page = self.client.conversations_replies(
                channel=self.key.channel,
                ts=self.key.thread_ts,
                oldest=f"{max(0.0, oldest):.6f}",
                include_all_metadata=True,
                limit=REPLIES_PAGE,
                cursor=cursor,
            )
            for message in page.get("messages") or []:
                if message.get("bot_id") and matches(message):
                    return str(message["ts"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                return None


def _metadata_entry(message: dict[str, Any]) -> str | None:
    metadata = message.get("metadata") or {}
    if metadata.get("event_type") != METADATA_EVENT:
        return None
    return (metadata.get("event_payload") or {}).get("outbox_id")


def _refused(error: Exception) -> bool:
    """Slack answered with an error or a 429: the message was certainly not posted."""
    response = getattr(error, "response", None)
    return response is not None and getattr(response, "status_code", 0) in (200, 400, 429)
