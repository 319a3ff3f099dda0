"""A model step's text and tool calls, streamed into the thread as the model writes them.

Each step the turn publishes (jobs.session.live) has one outbox entry; delivering it starts a
Slack stream (chat.startStream) with what the step has so far, appends what it gains
(chat.appendStream, at most every `APPEND_EVERY_S`: a run that comes sooner waits out the
rest) and stops the stream once the step is done (chat.stopStream, carrying what was not
appended yet); an answer's stream ends with the feedback buttons. An answer of at most
`POST_CHARS` already written whole when delivery reaches its entry (a busy deliverer, a fast
model) is posted instead, buttons and all: the message a stream would end as, in one call
(`ThreadPoster.post_once`, found by its metadata after a crash). Until the step is in the
thread the cursor waits at the entry, so what follows in the outbox is posted after it, in order.

Ledger entry `live:<turn>:<step>:<attempt>` holds the stream's ts; notes hold the characters
appended (`:sent`), the task statuses shown (`:tasks`), an append in flight (`:appending`) and
completion (`:done`), each written with the call's outcome in one step. An append whose
answer was lost, or a stream Slack closed (`message_not_in_streaming_state`), is never
appended to again: once the step is done its message is stopped and edited to the whole text,
so a crash or a retry neither repeats nor loses text. A stream shows at most `STREAM_CHARS`
(counted as Slack gets them, broken mentions included);
the rest of a longer step follows as answer messages. When Slack refuses streaming in the
channel, the session falls back to the card and one answer post (`REFUSED_NOTE`).

The text and the tasks go out under the channel's `PostingRules` like every post: each piece is
the text so far neutralised between two offsets (gateway.render.mentions), and while the model
still writes, a piece stops short of a `<` or `@` whose next characters are not written yet, so
a `<!chan` appended now and a `nel>` appended later never join into a mention in the thread.
Slack's streaming methods take no unfurl flags; a stream's links unfurl as Slack decides.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from slack_sdk.errors import SlackApiError

from gateway.delivery.answers import CHUNK_CHARS, post_answer
from gateway.delivery.ledger import Notes
from gateway.delivery.poster import METADATA_EVENT, ThreadPoster
from gateway.render.feedback import feedback_block
from gateway.render.mentions import settled
from gateway.render.notices import SlackMessage
from jobs.keys import SessionKey
from jobs.session import live
from jobs.session.live import LiveStep
from jobs.session.notices import AnswerNotice, LiveNotice
from jobs.session.store import SessionStore

log = logging.getLogger(__name__)

STREAM_CHARS = 12_000  # what one streamed message shows; Slack's markdown limit for a message
CALL_CHARS = 4_000  # text per start/append call, under Slack's 12,000 per call with room to spare
POST_CHARS = CHUNK_CHARS  # an answer written whole by now, this short, is posted: one call, not two
APPEND_EVERY_S = 1.0  # chat.appendStream is Tier 4 (100+/min per workspace): ~1 a second a stream
REFUSED_NOTE = "streaming:refused"  # ledger note: Slack refused streaming here (the error code)
RECIPIENT_TEAM_NOTE = "streaming:team"  # ledger note: the owner's own team, when not the workspace's
# Slack cannot stream into this conversation: the session falls back to the card and one post.
# For a person of another organisation (Slack Connect) Slack does not find the recipient named
# with the host workspace's team (user_not_found; the stream is tried once more with the team
# users.info gives them), and one it cannot name at all (a workflow's mention) is
# missing_recipient_*: retrying the same stream cannot help either.
REFUSED = frozenset(
    {
        "method_not_supported_for_channel_type",
        "channel_type_not_supported",
        "unknown_method",
        "user_not_found",
        "missing_recipient_team_id",
        "missing_recipient_user_id",
    }
)
CLOSED = frozenset({"message_not_in_streaming_state"})  # Slack stopped the stream (idle or too long)
Unsent = tuple[int, str, list[dict[str, Any]]]  # characters shown, the next piece, the changed tasks
CUT_OFF = "\n\n_(cut off: the model was asked again)_"


class StepStreams:
    def __init__(self, store: SessionStore, poster: ThreadPoster, enabled: bool) -> None:
        self.store = store
        self.poster = poster
        self.ledger = poster.ledger
        self.client = poster.client
        self.key = store.key
        self.enabled = enabled

    def streaming(self) -> bool:
        return self.enabled and not self.ledger.note(REFUSED_NOTE)

    def answered(self, notice: AnswerNotice) -> bool:
        """The answer is in the thread already: its step's stream showed all of it."""
        return notice.step is not None and bool(self.ledger.note(_answered_note(notice.turn_id, notice.step)))

    def deliver(self, notice: LiveNotice) -> bool:
        """Show the step as far as it is written; True once its stream is complete (or never
        will be shown) and the cursor may pass it."""
        if not self.streaming():  # the answer is posted whole; the step's text is not needed
            live.forget(self.store, notice.turn_id, notice.step)
            return True
        record = live.read(self.store, notice.turn_id, notice.step)
        if record is None:
            return True
        self._settle_attempts(record)
        if not record.done and not self._turn_running(record.turn_id):
            record = record.model_copy(update={"done": True})  # its worker died: show what it wrote
        base = _base(record)
        if self.ledger.note(f"{base}:done"):
            return self._forget(record)
        try:
            return self._advance(base, record)
        except SlackApiError as error:
            code = error.response.get("error")
            if code == "user_not_found" and self.ledger.ts(base) is None and self._name_their_team():
                self.ledger.abandon(base)
                return self.deliver(notice)
            if code in REFUSED and self.ledger.ts(base) is None:
                log.warning("%s: Slack refused streaming (%s); answers are posted whole", self.key, code)
                self.ledger.abandon(base)
                self.ledger.set_note(REFUSED_NOTE, str(code))
                return self._forget(record)
            if code not in CLOSED:
                raise
            self.ledger.set_note(f"{base}:closed", "1")
            return self._advance(base, record)

    # -- the steps of one stream ---------------------------------------------------------

    def _advance(self, base: str, record: LiveStep) -> bool:
        if self._postable(base, record):
            return self._post_whole(base, record)
        ts = self._started(base, record)
        if ts is None:
            return record.done
        if self.ledger.note(f"{base}:closed") or self.ledger.note(f"{base}:appending"):
            self.ledger.set_note(f"{base}:closed", "1")
            return record.done and self._complete_by_edit(base, ts, record)
        wait = float(self.ledger.note(f"{base}:at") or 0) + APPEND_EVERY_S - time.time()
        if not record.done and wait > 0:
            # Under a second: waiting here shows the text sooner than a timer (whole seconds) would.
            time.sleep(wait)
            record = live.read(self.store, record.turn_id, record.step) or record
            if _base(record) != base:
                return False  # asked again meanwhile: the next run settles the attempts
        if not record.done:
            self._append(base, ts, record)
            return False
        self._finish(base, ts, record)
        return self._completed(base, record)

    def _postable(self, base: str, record: LiveStep) -> bool:
        """A short answer already written whole when its stream would start: one post shows the
        same message as a stream started and stopped (two calls; chat.stopStream is Tier 2)."""
        short = len(record.text.strip()) > 0 and len(record.text) <= POST_CHARS
        return record.done and record.final and short and not self.ledger.note(f"{base}:start")

    def _post_whole(self, base: str, record: LiveStep) -> bool:
        self.ledger.set_note(answered_turn_note(record.turn_id), "1")  # before its buttons can be seen
        self.poster.post_once(base, _answer_message(self.key, record, record.text))
        self.ledger.set_note(f"{base}:sent", str(len(record.text)))
        return self._completed(base, record)

    def _name_their_team(self) -> bool:
        """The owner may be a person of another organisation (Slack Connect), whom Slack finds
        only with their own team: noted, for the streams to come, when users.info gives one that
        is not the workspace's (and had not been noted yet)."""
        owner = self.store.meta.read().owner
        if not owner or self.ledger.note(RECIPIENT_TEAM_NOTE):
            return False
        try:
            team = (self.client.users_info(user=owner).get("user") or {}).get("team_id")
        except SlackApiError:
            return False
        if not isinstance(team, str) or team in ("", self.key.team):
            return False
        self.ledger.set_note(RECIPIENT_TEAM_NOTE, team)
        return True

    def _started(self, base: str, record: LiveStep) -> str | None:
        start, their_team = self.ledger.notes(f"{base}:start", RECIPIENT_TEAM_NOTE)
        start = start or ""
        known = self.poster.known(
            base, lambda m: bool(start) and _unmarked(m) and m.get("text", "").startswith(start)
        )
        end = self._ready(record, 0)
        if known or not (end or record.tasks):
            return known
        text = self.poster.rules.between(record.text, 0, end)
        self.ledger.set_note(f"{base}:start", text)  # as Slack shows it, to find it after a crash
        self.ledger.begin(base)
        self.poster.pace()  # a stream is a new message: it takes the channel's posting slot
        answer = self.client.chat_startStream(
            channel=self.key.channel,
            thread_ts=self.key.thread_ts,
            recipient_team_id=their_team or self.key.team,
            recipient_user_id=self.store.meta.read().owner or None,
            task_display_mode="timeline",
            chunks=self._chunks(text, _changed_tasks(record, {})),
        )
        ts = str(answer["ts"])
        self.ledger.record_with_notes(base, ts, self._shown_notes(base, end, record))
        log.info("started the stream of %s in %s as %s", base, self.key, ts)
        return ts

    def _append(self, base: str, ts: str, record: LiveStep) -> None:
        """One append a run while the model writes: the next publish brings more."""
        sent, piece, tasks = self._unsent(base, record)
        if piece or tasks:
            self._send(base, ts, record, (sent, piece, tasks), last=False)

    def _finish(self, base: str, ts: str, record: LiveStep) -> None:
        """Append what one call cannot carry, then stop the stream with the rest of it."""
        unsent = self._unsent(base, record)
        while unsent[0] + len(unsent[1]) < self._shown_chars(record):
            self._send(base, ts, record, unsent, last=False)
            unsent = self._unsent(base, record)
        self._send(base, ts, record, unsent, last=True)

    def _unsent(self, base: str, record: LiveStep) -> Unsent:
        """Characters shown so far, the next piece of text (one call's worth), the tasks changed."""
        sent = int(self.ledger.note(f"{base}:sent") or 0)
        piece = record.text[sent : self._ready(record, sent)]
        return sent, piece, _changed_tasks(record, json.loads(self.ledger.note(f"{base}:tasks") or "{}"))

    def _send(self, base: str, ts: str, record: LiveStep, unsent: Unsent, *, last: bool) -> None:
        """Append the piece and the tasks (`last`: stop the stream with them), marked in flight:
        a lost answer leaves the mark, and the step is completed by an edit, never appended to again."""
        sent, piece, tasks = unsent
        self.ledger.set_note(f"{base}:appending", str(sent + len(piece)))
        chunks = self._chunks(self.poster.rules.between(record.text, sent, sent + len(piece)), tasks)
        if last:
            self._stop(ts, record, base, chunks or None)
        else:
            self.client.chat_appendStream(channel=self.key.channel, ts=ts, chunks=chunks)
        self.ledger.replace_notes(self._shown_notes(base, sent + len(piece), record), f"{base}:appending")

    def _stop(self, ts: str, record: LiveStep, base: str, chunks: list[dict[str, Any]] | None = None) -> None:
        blocks = [feedback_block(self.key, record.turn_id)] if record.final else None
        if record.final:  # before the buttons can be seen, so a click finds the turn answered
            self.ledger.set_note(answered_turn_note(record.turn_id), "1")
        self.client.chat_stopStream(
            channel=self.key.channel,
            ts=ts,
            chunks=chunks,
            blocks=blocks,
            metadata={"event_type": METADATA_EVENT, "event_payload": {"outbox_id": base}},
        )

    def _complete_by_edit(self, base: str, ts: str, record: LiveStep) -> bool:
        """The stream may show part of the text (a lost append, or Slack closed it): stop it if
        it is open, then make the message the step's text, whole."""
        try:
            self._stop(ts, record, base)
        except SlackApiError as error:
            if error.response.get("error") not in CLOSED:
                raise
        shown = record.text[: self._shown_chars(record)]
        if shown:
            self.poster.update(ts, _answer_message(self.key, record, shown))
        self.ledger.set_note(f"{base}:sent", str(len(shown)))
        return self._completed(base, record)

    def _completed(self, base: str, record: LiveStep) -> bool:
        sent = int(self.ledger.note(f"{base}:sent") or 0)
        if record.text[sent:].strip():
            post_answer(self.poster, f"{base}:rest", record.text[sent:])
        notes: Notes = {f"{base}:done": "1"}
        if record.final:
            notes[_answered_note(record.turn_id, record.step)] = "1"
        self.ledger.set_notes(notes)
        return self._forget(record)

    # -- around the stream ---------------------------------------------------------------

    def _settle_attempts(self, record: LiveStep) -> None:
        """The model was asked the step again: the earlier attempt's stream ends, marked so."""
        attempt_note = f"live:{record.turn_id}:{record.step}:attempt"
        shown = self.ledger.note(attempt_note)
        if shown is not None and int(shown) < record.attempt:
            old = f"live:{record.turn_id}:{record.step}:{shown}"
            ts = self.ledger.ts(old)
            if ts and not self.ledger.note(f"{old}:done"):
                try:
                    self._stop(ts, record.model_copy(update={"final": False}), old, self._chunks(CUT_OFF, []))
                except SlackApiError as error:
                    if error.response.get("error") not in CLOSED:
                        raise
                self.ledger.set_note(f"{old}:done", "1")
        if shown is None or int(shown) < record.attempt:
            self.ledger.set_note(attempt_note, str(record.attempt))

    def _turn_running(self, turn_id: str) -> bool:
        meta = self.store.meta.read()
        return meta.state == "running" and meta.turn_id == turn_id

    def _shown_notes(self, base: str, sent: int, record: LiveStep) -> Notes:
        tasks = json.dumps({task.id: task.status for task in record.tasks})
        return {f"{base}:sent": str(sent), f"{base}:tasks": tasks, f"{base}:at": f"{time.time():.3f}"}

    def _forget(self, record: LiveStep) -> bool:
        live.forget(self.store, record.turn_id, record.step)
        return True

    def _ready(self, record: LiveStep, sent: int) -> int:
        """Where the next piece after `sent` ends: one call's worth, within what the stream
        shows, and, while the model still writes, short of a mention its next characters decide."""
        end = min(self._shown_chars(record), sent + CALL_CHARS)
        return end if record.done else max(sent, settled(record.text, end, sent))

    def _shown_chars(self, record: LiveStep) -> int:
        """How much of the step's text the stream shows: STREAM_CHARS once broken mentions
        (a character longer each) are counted, so the message fits Slack's limit."""
        most = min(len(record.text), STREAM_CHARS)
        over = len(self.poster.rules.between(record.text, 0, most)) - STREAM_CHARS
        return most - over if over > 0 else most

    def _chunks(self, shown: str, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`shown` is neutralised already (in its place in the whole text); the tasks' words here."""
        text = [{"type": "markdown_text", "text": shown}] if shown else []
        return text + [self.poster.rules.arguments(task) for task in tasks]


def answered_turn_note(turn_id: str) -> str:
    """Ledger note: the turn's answer was streamed, with feedback buttons under it."""
    return f"answered:{turn_id}"


def _base(record: LiveStep) -> str:
    return f"live:{record.turn_id}:{record.step}:{record.attempt}"


def _answered_note(turn_id: str | None, step: int) -> str:
    return f"live:{turn_id}:{step}:answered"


def _answer_message(session: SessionKey, record: LiveStep, shown: str) -> SlackMessage:
    """The step's text as one message: what its stopped stream shows, the buttons under an answer."""
    blocks: list[dict[str, Any]] = [{"type": "markdown", "text": shown}]
    if record.final:
        blocks.append(feedback_block(session, record.turn_id))
    return SlackMessage(text=shown[:CALL_CHARS], blocks=blocks)


def _changed_tasks(record: LiveStep, shown: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"type": "task_update", "id": t.id, "title": t.title, "status": t.status}
        | ({"details": t.details} if t.details else {})
        | ({"output": t.output} if t.output else {})
        for t in record.tasks
        if shown.get(t.id) != t.status
    ]


def _unmarked(message: dict[str, Any]) -> bool:
    """Not a message threadline posted under an entry (those carry its metadata)."""
    return not (message.get("metadata") or {}).get("event_type")
