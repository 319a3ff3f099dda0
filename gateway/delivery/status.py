"""The "is working…" status under the thread (`assistant.threads.setStatus`).

Slack drops the status two minutes after it was set, and when the app posts a message; it is
set again before either takes it away while the turn runs, and cleared when the turn ends or
fails. Failing to set it never stops a delivery: it is decoration.
"""

from __future__ import annotations

import logging
import time

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from gateway.delivery.ledger import Ledger
from gateway.delivery.timers import deliver_later
from jobs.session.store import SessionStore

log = logging.getLogger(__name__)

REFRESH_AFTER_S = 90  # Slack clears a status after 120 s; refresh with room for a slow scheduler
STATUS_AT = "status_at"
STATUS_TEXT = "status_text"


class AssistantStatus:
    def __init__(self, store: SessionStore, client: WebClient, ledger: Ledger) -> None:
        self.store = store
        self.client = client
        self.ledger = ledger

    def working(self, text: str) -> None:
        set_at = float(self.ledger.note(STATUS_AT) or 0)
        fresh = time.time() - set_at < REFRESH_AFTER_S
        if fresh and self.ledger.note(STATUS_TEXT) == text:
            return
        # Noted before the call: a call whose answer is lost may still have set the status,
        # and then it must be cleared at the end like any other.
        self.ledger.set_note(STATUS_TEXT, text)
        if self._set(text):
            self.ledger.set_note(STATUS_AT, f"{time.time():.3f}")
        deliver_later(self.store.redis, self.store.key, "status", REFRESH_AFTER_S)

    def refresh_if_due(self) -> None:
        text = self.ledger.note(STATUS_TEXT)
        if text and time.time() - float(self.ledger.note(STATUS_AT) or 0) >= REFRESH_AFTER_S:
            self.working(text)

    def message_posted(self) -> None:
        """Slack took the status away with the post: the next `working` sets it again."""
        if self.ledger.note(STATUS_TEXT):
            self.ledger.set_note(STATUS_AT, "0")

    def clear(self) -> None:
        if not self.ledger.note(STATUS_TEXT):
            return
        self._set("")
        self.ledger.set_note(STATUS_TEXT, "")
        self.ledger.set_note(STATUS_AT, "0")

    def _set(self, status: str) -> bool:
        key = self.store.key
        try:
            self.client.assistant_threads_setStatus(
                channel_id=key.channel, thread_ts=key.thread_ts, status=status
            )
        except SlackApiError as error:
            log.info("no status for %s (%s)", key, error.response.get("error"))
            return False
        return True
