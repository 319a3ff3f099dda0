"""One progress card per turn: posted once there is something to show (a tool call, a note),
then edited with the latest snapshot.

Edits of a running card come at most every `EDIT_EVERY_S`; a snapshot that arrives sooner is
kept as the card's pending snapshot and shown by a delivery scheduled for when the card may
change again (newer snapshots replace it meanwhile). A final snapshot is shown at once.
"""

from __future__ import annotations

import time

from gateway.delivery.poster import ThreadPoster
from gateway.delivery.status import AssistantStatus
from gateway.delivery.timers import deliver_later
from gateway.render.notices import SlackMessage
from gateway.render.progress_card import card_blocks, card_text
from jobs.keys import pending_cards_key
from jobs.redis_text import text
from jobs.session.notices import ProgressNotice
from jobs.session.store import SessionStore

EDIT_EVERY_S = 3.0  # Slack's chat.update is rate limited; a card changing faster is unreadable
RUNNING_CARD = "running_card"  # note: the turn whose card shows "running", for status refreshes


def status_text(notice: ProgressNotice) -> str:
    running = [tool.name for tool in notice.card.tools if tool.state == "running"]
    return f"is running {', '.join(running)}…" if running else "is thinking…"


def stream_order(entry_id: str) -> tuple[int, int]:
    millis, _, seq = entry_id.partition("-")
    return int(millis), int(seq or 0)


class Cards:
    def __init__(self, store: SessionStore, poster: ThreadPoster, status: AssistantStatus) -> None:
        self.store = store
        self.poster = poster
        self.ledger = poster.ledger
        self.status = status
        self.pending_key = pending_cards_key(store.key)

    def show(self, notice_id: str, notice: ProgressNotice) -> None:
        card = notice.card
        entry = f"card:{card.turn_id}"
        applied = self.ledger.note(f"{entry}:shown")
        if applied and stream_order(applied) >= stream_order(notice_id):
            return
        ts = self.ledger.ts(entry)
        if ts is None and not (card.tools or card.note):
            # Nothing to show yet but "working": the status says that without a message, and a
            # turn that only thinks and answers leaves no card behind.
            self._shown(entry, notice_id, notice)
            return
        if ts is None:
            ts, posted = self.poster.post_once(entry, self._message(notice))
            if posted:
                self.status.message_posted()
                self._shown(entry, notice_id, notice)
                return
        wait = float(self.ledger.note(f"{entry}:edited_at") or 0) + EDIT_EVERY_S - time.time()
        if card.state == "running" and wait > 0:
            self.store.redis.hset(self.pending_key, card.turn_id, notice_id)
            deliver_later(self.store.redis, self.store.key, "card", wait)
            return
        self.poster.update(ts, self._message(notice))
        self._shown(entry, notice_id, notice)

    def show_due(self) -> None:
        """Show pending snapshots whose card may change now (called by every delivery run)."""
        for turn_id, notice_id in self.store.redis.hgetall(self.pending_key).items():
            notice = self._read(text(notice_id))
            self.store.redis.hdel(self.pending_key, turn_id)
            if isinstance(notice, ProgressNotice):
                self.show(text(notice_id), notice)

    def refresh_status(self) -> None:
        """Keep "is working…" alive while a card runs (Slack drops it after two minutes)."""
        if self.ledger.note(RUNNING_CARD):
            self.status.refresh_if_due()

    def _shown(self, entry: str, notice_id: str, notice: ProgressNotice) -> None:
        turn_id = notice.card.turn_id
        self.ledger.set_note(f"{entry}:shown", notice_id)
        self.ledger.set_note(f"{entry}:edited_at", f"{time.time():.3f}")
        self.store.redis.hdel(self.pending_key, turn_id)
        if notice.card.state == "running":
            self.ledger.set_note(RUNNING_CARD, turn_id)
            self.status.working(status_text(notice))
        elif self.ledger.note(RUNNING_CARD) == turn_id:
            self.ledger.set_note(RUNNING_CARD, "")
            self.status.clear()

    def _message(self, notice: ProgressNotice) -> SlackMessage:
        card = notice.card
        return SlackMessage(text=card_text(card), blocks=card_blocks(card, self.store.key))

    def _read(self, notice_id: str) -> ProgressNotice | None:
        for found_id, notice in self.store.notices(after=_before(notice_id), count=1):
            if found_id == notice_id and isinstance(notice, ProgressNotice):
                return notice
        return None


def _before(entry_id: str) -> str:
    """The stream id just before `entry_id`, so an exclusive range starting there includes it."""
    millis, seq = stream_order(entry_id)
    return f"{millis}-{seq - 1}" if seq else f"{millis - 1}-{2**63 - 1}"
