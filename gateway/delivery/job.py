"""The delivery job (queue `slack`): post a session's outbox to its thread, in order, once.

One deliverer per thread at a time (a renewed lock); a cursor in the session's meta says how
far the outbox was delivered, and the ledger (outbox id → Slack ts, with in-flight marks)
makes a retried or crashed delivery post nothing twice. A turn's progress is one entry that
shows its newest card (gateway.delivery.cards); answers and every other notice are posted, in
order, always.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from gateway.delivery.agent_session import STATUS_AT_NOTE, STATUS_NOTE, TITLED_NOTE, TRIES_NOTE
from gateway.delivery.cards import RUNNING_CARD, Cards
from gateway.delivery.lock import LOCK_TTL_MS, DeliveryLock
from gateway.delivery.notices import COMPACTION_MESSAGE, NoticePosting
from gateway.delivery.poster import ThreadPoster
from gateway.delivery.status import STATUS_AT, STATUS_TEXT, AssistantStatus
from gateway.delivery.streams import RECIPIENT_TEAM_NOTE, REFUSED_NOTE, StepStreams
from gateway.delivery.timers import deliver_later
from gateway.render.mentions import PostingRules
from gateway.slack_client import web_client
from jobs import runtime
from jobs.keys import SessionKey, deliver_again_key, delivering_key, slack_pause_key, timer_key
from jobs.queues import DELIVERY_TIMEOUT_S, delivery_started
from jobs.session.notices import LiveNotice, Notice, ProgressNotice
from jobs.session.store import SessionStore

log = logging.getLogger(__name__)

WATCHDOG_S = LOCK_TTL_MS / 1000 + 5  # if this run dies, a later one finishes its work
# Slack errors that no retry can fix: the notice is skipped (logged) so the thread is not stuck.
PERMANENT_ERRORS = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "thread_not_found",
        "invalid_thread_ts",
        "message_not_found",
        "cant_update_message",
        "no_text",
        "invalid_blocks",
        "msg_too_long",
        "msg_blocks_too_long",
        "markdown_text_conflict",
        "invalid_metadata_format",
        "metadata_too_large",
        "team_not_found",
        "account_inactive",
        "token_revoked",
    }
)
# The thread's own notes, which nearly every pass reads: read together as a pass starts.
PASS_NOTES = (
    RUNNING_CARD,
    REFUSED_NOTE,
    RECIPIENT_TEAM_NOTE,
    STATUS_NOTE,
    STATUS_AT_NOTE,
    TITLED_NOTE,
    TRIES_NOTE,
    STATUS_AT,
    STATUS_TEXT,
    COMPACTION_MESSAGE,
)
RETRY_BASE_S = 5  # a transient failure (Slack 5xx, network) is retried after 5, 10, 20 … s
RETRY_MAX_S = 300


def deliver(session_key: str) -> int:
    """RQ entry point: post every undelivered notice; returns how many were handled."""
    key = SessionKey.parse(session_key)
    if key.is_subagent:
        return 0  # a sub-agent has no thread; what people see of it goes through its root's
    redis = runtime.redis_client()
    delivery_started(redis, key)
    settings = runtime.settings()
    rules = PostingRules(broadcasts=key.channel in settings.broadcast_channels, unfurl=settings.SLACK_UNFURL)
    store = SessionStore(redis, key)
    return Delivery(store, web_client(settings), streaming=settings.SLACK_STREAMING, rules=rules).run()


class RateLimited(Exception):
    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"rate limited for {retry_after_s}s")
        self.retry_after_s = retry_after_s


class Delivery:
    def __init__(
        self,
        store: SessionStore,
        client: WebClient,
        *,
        streaming: bool = True,
        rules: PostingRules | None = None,
    ) -> None:
        self.store = store
        self.redis = store.redis
        self.key = store.key
        self.poster = ThreadPoster(store, client, rules)
        self.status = AssistantStatus(store, client, self.poster.ledger)
        self.streams = StepStreams(store, self.poster, enabled=streaming)
        self.cards = Cards(store, self.poster, self.status, streaming=self.streams.streaming)
        self.posting = NoticePosting(self.poster, self.status, self.streams)

    def run(self) -> int:
        paused_ms = self.redis.pttl(slack_pause_key(self.key.team))
        if paused_ms > 0:  # Slack asked this workspace to wait: no delivery may post before then
            deliver_later(self.redis, self.key, "retry", paused_ms / 1000)
            return 0
        handled = 0
        while True:
            # Asked before trying the lock: a holder letting go after this sees it and looks again.
            self.redis.set(deliver_again_key(self.key), "1", ex=DELIVERY_TIMEOUT_S)
            lock = DeliveryLock(self.redis, delivering_key(self.key))
            if not lock.acquire():
                # The holder looks again before it returns. One that dies is covered by its watchdog
                # (still to come: timers are never cancelled), or else by a sweep after its lock.
                if not self.redis.exists(timer_key(self.key, "watchdog")):
                    deliver_later(self.redis, self.key, "sweep", lock.remaining_ms() / 1000 + 0.1)
                return handled
            with lock:
                self.redis.delete(deliver_again_key(self.key))  # this run reads all there is
                self.poster.ledger.hold_notes(*PASS_NOTES)
                try:
                    done, waiting = self._run_locked()
                    handled += done
                except RateLimited as limited:
                    # Not now: the scheduled retry goes on once Slack's Retry-After has passed.
                    log.warning(
                        "%s: rate limited past the retries; again in %ss", self.key, limited.retry_after_s
                    )
                    self.redis.set(slack_pause_key(self.key.team), "1", px=int(limited.retry_after_s * 1000))
                    deliver_later(self.redis, self.key, "retry", limited.retry_after_s)
                    return handled
                finally:
                    self.poster.ledger.let_go_of_notes()
            if self.redis.delete(deliver_again_key(self.key)):
                continue  # a run came while this one held the lock: what it was for may be new
            # A step still streaming holds the cursor: its next publish (or timer) comes back.
            if waiting or not self._pending():
                return handled

    def _run_locked(self) -> tuple[int, bool]:
        """Notices handled, and whether a step still streaming holds the cursor."""
        entries = self.store.notices(after=self._cursor())
        if entries:
            deliver_later(self.redis, self.key, "watchdog", WATCHDOG_S)
        handled, waiting = self._drain(entries)
        self.cards.show_due()
        self.cards.refresh_status()
        return handled, waiting

    def _pending(self) -> bool:
        return bool(self.store.notices(after=self._cursor(), count=1))

    def _cursor(self) -> str | None:
        return self.store.meta.read().delivered

    def _drain(self, entries: list[tuple[str, Notice]]) -> tuple[int, bool]:
        for handled, (notice_id, notice) in enumerate(entries):
            if not isinstance(notice, ProgressNotice):
                # Cards already in the thread catch up first: the final card before the answer.
                self._deliver_one(notice_id, notice, self.cards.show_due)
            if isinstance(notice, LiveNotice):
                if not self._stream(notice_id, notice):
                    return handled, True
            else:
                # A turn's one progress entry shows its newest card, at the place of its first snapshot.
                self._deliver_one(notice_id, notice)
            self.store.meta.set_delivered(notice_id)
        return len(entries), False

    def _stream(self, notice_id: str, notice: LiveNotice) -> bool:
        """Show the step's stream as far as it is written; True once the cursor may pass it."""
        try:
            streaming = self.streams.streaming()
            done = self.streams.deliver(notice)
            if streaming and not self.streams.streaming():  # refused just now: the card is due after all
                self.cards.show_skipped(notice.turn_id)
            return done
        except SlackApiError as error:
            self._failed(notice_id, notice, error)  # raises unless no retry can help
            return True

    def _deliver_one(self, notice_id: str, notice: Notice, step: Callable[[], None] | None = None) -> None:
        try:
            if step is not None:
                step()
            elif isinstance(notice, ProgressNotice):
                self.cards.show(notice.card.turn_id, legacy=notice.card)
            else:
                self.posting.post(notice_id, notice)
        except SlackApiError as error:
            self._failed(notice_id, notice, error)

    def _failed(self, notice_id: str, notice: Notice, error: SlackApiError) -> None:
        code = error.response.get("error")
        if error.response.status_code == 429:
            raise RateLimited(_retry_after(error)) from error
        if code in PERMANENT_ERRORS:
            log.error(
                "%s: %s notice %s cannot be delivered (%s); skipped", self.key, notice.kind, notice_id, code
            )
            return
        attempts = int(self.poster.ledger.note(f"attempts:{notice_id}") or 0) + 1
        self.poster.ledger.set_note(f"attempts:{notice_id}", str(attempts))
        delay = min(RETRY_MAX_S, RETRY_BASE_S * 2 ** (attempts - 1))
        log.warning(
            "%s: %s notice %s failed (%s); retry %d in %ss",
            self.key,
            notice.kind,
            notice_id,
            code,
            attempts,
            delay,
        )
        deliver_later(self.redis, self.key, "retry", delay)
        raise error


def _retry_after(error: SlackApiError) -> float:
    headers = error.response.headers or {}
    value = headers.get("Retry-After") or headers.get("retry-after") or "1"
    try:
        return max(1.0, float(value if isinstance(value, str) else value[0]))
    except (TypeError, ValueError):
        return 1.0
