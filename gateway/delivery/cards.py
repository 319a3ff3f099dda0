"""One progress card per turn: posted once there is something to show (a tool call, a note),
then edited with the newest snapshot.

The outbox holds one entry per turn, at the place of its first snapshot; the card itself is the
newest snapshot in the session's progress hash (`SessionStore.card_snapshot`), with a version
that grows with every snapshot. A snapshot written after the entry marks the turn in
`cards_pending`; the delivery shows pending cards before the next notice it posts and at the
end of each run, so a card never falls behind what follows it (the final card before the answer).
While the session's steps stream (gateway.delivery.streams) no card is posted: the streams show
the tool calls; a card already in the thread is still edited. Edits of a running card come at
most every `EDIT_EVERY_S`; a snapshot that arrives sooner stays
pending and a delivery is scheduled for when the card may change again. A final snapshot is
shown at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gateway.delivery.ledger import Notes
from gateway.delivery.poster import ThreadPoster
from gateway.delivery.status import AssistantStatus
from gateway.delivery.timers import deliver_later
from gateway.render.notices import SlackMessage
from gateway.render.progress_card import card_blocks, card_text
from jobs.keys import pending_cards_key
from jobs.lua import lua
from jobs.redis_text import text
from jobs.session.notices import TurnCard
from jobs.session.store import SessionStore

EDIT_EVERY_S = 3.0  # Slack's chat.update is rate limited; a card changing faster is unreadable
RUNNING_CARD = "running_card"  # note: the turn whose card shows "running", for status refreshes
LEGACY_VERSION = 0  # an outbox entry written with its card inside (before the progress hash)

# Forget a pending card once the version shown covers it; a newer snapshot written meanwhile
# stays pending. A value that is not a number was left by an older delivery: it goes.
_SETTLE = """
local pending = redis.call('HGET', KEYS[1], ARGV[1])
if pending and (tonumber(pending) == nil or tonumber(pending) <= tonumber(ARGV[2])) then
  redis.call('HDEL', KEYS[1], ARGV[1])
end
"""


def status_text(card: TurnCard) -> str:
    """The loading message under the thread: what the turn does now."""
    running = [tool.name for tool in card.tools if tool.state == "running"]
    return f"Running {', '.join(running)}…" if running else "Thinking…"


def version_note(turn_id: str) -> str:
    """Ledger note: the card version last shown; present once the turn's entry was reached."""
    return f"card:{turn_id}:version"


class Cards:
    def __init__(
        self,
        store: SessionStore,
        poster: ThreadPoster,
        status: AssistantStatus,
        streaming: Callable[[], bool] = lambda: False,
    ) -> None:
        self.store = store
        self.streaming = streaming
        self.poster = poster
        self.ledger = poster.ledger
        self.status = status
        self.pending_key = pending_cards_key(store.key)

    def show(self, turn_id: str, legacy: TurnCard | None = None) -> None:
        """Show the turn's newest card (the turn's outbox entry, or a pending snapshot)."""
        snapshot = self.store.card_snapshot(turn_id)
        if snapshot is None and legacy is None:
            return
        version, card = snapshot if snapshot is not None else (LEGACY_VERSION, legacy)
        assert card is not None
        applied = self.ledger.note(version_note(turn_id))
        if applied is not None and version != LEGACY_VERSION and int(applied) >= version:
            self._settle(turn_id, int(applied))
            return
        self._show(turn_id, version, card)

    def show_skipped(self, turn_id: str) -> None:
        """Streaming was refused: the turn's card, skipped while its steps were to stream, is
        posted after all (with its newest snapshot)."""
        if self.ledger.ts(f"card:{turn_id}") is None:
            self.ledger.set_note(version_note(turn_id), str(LEGACY_VERSION - 1))
            self.show(turn_id)

    def show_due(self) -> None:
        """Show pending snapshots of cards already in the thread whose card may change now: a
        turn whose entry the cursor has not reached yet is shown there, in its place."""
        for turn_id in self.store.redis.hkeys(self.pending_key):
            turn = text(turn_id)
            if self.ledger.note(version_note(turn)) is not None:
                self.show(turn)

    def refresh_status(self) -> None:
        """Keep "is working…" alive while a card runs (Slack drops it after two minutes), and
        say again a session status Slack failed to take."""
        if self.ledger.note(RUNNING_CARD):
            self.status.refresh_if_due()
        self.status.retry_if_due()

    def _show(self, turn_id: str, version: int, card: TurnCard) -> None:
        entry = f"card:{turn_id}"
        ts = self.ledger.ts(entry)
        if ts is None and (not (card.tools or card.note) or self.streaming()):
            # Nothing to show yet but "working": the status says that without a message, and a
            # turn that only thinks and answers leaves no card behind. While steps stream, their
            # tool calls show as tasks under their text: no card repeats them.
            self._shown(entry, version, card)
            return
        if ts is None:
            ts, posted = self.poster.post_once(entry, self._message(card))
            if posted:
                self.status.message_posted()
                self._shown(entry, version, card)
                return
        wait = float(self.ledger.note(f"{entry}:edited_at") or 0) + EDIT_EVERY_S - time.time()
        if card.state == "running" and wait > 0:
            self.store.redis.hset(self.pending_key, turn_id, version)
            deliver_later(self.store.redis, self.store.key, "card", wait)
            return
        self.poster.update(ts, self._message(card))
        self._shown(entry, version, card)

    def _shown(self, entry: str, version: int, card: TurnCard) -> None:
        turn_id = card.turn_id
        running = card.state == "running"
        stopped = not running and self.ledger.note(RUNNING_CARD) == turn_id
        notes: Notes = {version_note(turn_id): str(version), f"{entry}:edited_at": f"{time.time():.3f}"}
        if running or stopped:
            notes[RUNNING_CARD] = turn_id if running else ""
        self.ledger.set_notes(notes)
        self._settle(turn_id, version)
        if running:
            self.status.working(self.poster.rules.text(status_text(card)))  # tool names are the model's
        elif stopped:
            self._stopped_running(card)

    def _stopped_running(self, card: TurnCard) -> None:
        if card.state == "awaiting_approval":
            self.status.parked()
        elif card.state == "handed_back":
            self.status.paused()
        else:
            self.status.clear()

    def _settle(self, turn_id: str, version: int) -> None:
        lua(self.store.redis, _SETTLE)(keys=[self.pending_key], args=[turn_id, version])

    def _message(self, card: TurnCard) -> SlackMessage:
        return SlackMessage(text=card_text(card), blocks=card_blocks(card, self.store.key))
