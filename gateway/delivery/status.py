"""What the thread shows while the agent works: Slack's agent session (gateway.delivery.
agent_session: `processing`, with its Stop button, while a turn runs) and the status line under
the thread (`assistant.threads.setStatus`).

The line says "is working…" and puts what runs in `loading_messages`: Slack normalises the
`status` text itself under the agent view, and shows the loading messages as they are. Slack
drops the line two minutes after it was set, and when the app posts a message; it is set again
before either takes it away while the turn runs, and cleared when the turn ends, fails or
parks. Failing to set either never stops a delivery: they are decoration.
"""

from __future__ import annotations

import logging
import time

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from gateway.delivery.agent_session import AgentSession
from gateway.delivery.ledger import Ledger
from gateway.delivery.timers import deliver_later
from jobs.session.store import SessionStore

log = logging.getLogger(__name__)

REFRESH_AFTER_S = 90  # Slack clears a status after 120 s; refresh with room for a slow scheduler
WORKING = "is working…"  # shown as "<app name> is working…" where Slack shows the status itself
LOADING_MESSAGE_CHARS = 150  # one line under the thread; a longer one says no more
STATUS_AT = "status_at"
STATUS_TEXT = "status_text"  # the loading message shown (what runs); empty once cleared


class AssistantStatus:
    def __init__(self, store: SessionStore, client: WebClient, ledger: Ledger) -> None:
        self.store = store
        self.client = client
        self.ledger = ledger
        self.session = AgentSession(store, client, ledger)

    def working(self, detail: str) -> None:
        """A turn runs, doing `detail` ("Running shell…")."""
        self.session.processing()
        detail = detail[:LOADING_MESSAGE_CHARS]
        set_at, shown = self.ledger.notes(STATUS_AT, STATUS_TEXT)
        if time.time() - float(set_at or 0) < REFRESH_AFTER_S and shown == detail:
            return
        # Noted before the call: a call whose answer is lost may still have set the status,
        # and then it must be cleared at the end like any other.
        self.ledger.set_note(STATUS_TEXT, detail)
        if self._set(WORKING, [detail]):
            self.ledger.set_note(STATUS_AT, f"{time.time():.3f}")
        deliver_later(self.store.redis, self.store.key, "status", REFRESH_AFTER_S)

    def refresh_if_due(self) -> None:
        detail, set_at = self.ledger.notes(STATUS_TEXT, STATUS_AT)
        if detail and time.time() - float(set_at or 0) >= REFRESH_AFTER_S:
            self.working(detail)

    def retry_if_due(self) -> None:
        self.session.retry_if_due()

    def message_posted(self) -> None:
        """Slack took the line away with the post: the next `working` sets it again."""
        if self.ledger.note(STATUS_TEXT):
            self.ledger.set_note(STATUS_AT, "0")

    def clear(self) -> None:
        """The turn is over (answered, failed, stopped, its worker gone)."""
        self._clear_line()
        self.session.active()

    def parked(self) -> None:
        """Nothing runs while a person decides on a call."""
        self._clear_line()
        self.session.suspended()

    def paused(self) -> None:
        """The worker handed the turn back: another goes on with it, so the session still works."""
        self._clear_line()

    def _clear_line(self) -> None:
        if not self.ledger.note(STATUS_TEXT):
            return
        self._set("", None)
        self.ledger.set_notes({STATUS_TEXT: "", STATUS_AT: "0"})

    def _set(self, status: str, loading: list[str] | None) -> bool:
        key = self.store.key
        try:
            self.client.assistant_threads_setStatus(
                channel_id=key.channel, thread_ts=key.thread_ts, status=status, loading_messages=loading
            )
        except SlackApiError as error:
            log.info("no status for %s (%s)", key, error.response.get("error"))
            return False
        return True
