"""Where a turn takes the files of its input (jobs.turn.uploads) and records what became of them.

Input reaches a turn two ways, and both pass here: what was on the wire when the turn started
(`catch_up`, before the loop, off the event loop the worker's turns share) and what arrives
while it runs (`after`, called by the sink as the loop takes input). Each shared message gets
one `attachments` message on the wire, keyed by its ts, so a retried or resumed turn writes it
once; files that were refused are also said in the thread.

The way out is here too: `OutboxFileSender`, what the send_file tool hands a file to.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from pydantic import BaseModel

from agent.fold import HistoryFold
from agent.messages import Message
from agent.wire import AppendMessage
from jobs.queues import schedule_delivery
from jobs.session.notices import FileNotice, InfoNotice
from jobs.session.store import SessionStore
from jobs.settings import Settings
from jobs.turn.uploads import (
    ATTACHMENTS,
    FileFetcher,
    Saved,
    attachments_message,
    message_ts,
    refusal_text,
    shared_files_of,
)

log = logging.getLogger(__name__)

Record = Callable[[BaseModel, str], str]  # append once under a key; returns the wire entry id


class Attachments:
    def __init__(self, store: SessionStore, settings: Settings, workspace: Path, turn_id: str) -> None:
        self.store = store
        self.settings = settings
        self.turn_id = turn_id
        self.fetcher = FileFetcher(settings, workspace)

    def catch_up(self, folder: HistoryFold, record: Record) -> None:
        """Files of input already in the history that no `attachments` message answers yet."""
        history = folder.history
        answered = {message_ts(m) for m in history if m.origin is not None and m.origin.kind == ATTACHMENTS}
        for message in list(folder.history):
            if shared_files_of(message) and message_ts(message) not in answered:
                note, record_id = self._take(message, record)
                folder.apply(AppendMessage(message=note), record_id)

    def after(self, arrived: list[tuple[Message, str]], record: Record) -> list[tuple[Message, str]]:
        """`arrived` with each shared message followed by its `attachments` message."""
        taken: list[tuple[Message, str]] = []
        for message, record_id in arrived:
            taken.append((message, record_id))
            if shared_files_of(message):
                taken.append(self._take(message, record))
        return taken

    def _take(self, message: Message, record: Record) -> tuple[Message, str]:
        outcomes = self.fetcher.fetch_all(shared_files_of(message))
        note = attachments_message(message, outcomes, vision=self.settings.LLM_VISION)
        record_id = record(AppendMessage(message=note), f"{ATTACHMENTS}:{message_ts(message)}")
        refused = refusal_text(outcomes)
        if refused is not None:
            self.store.post_notice(InfoNotice(turn_id=self.turn_id, text=refused))
            schedule_delivery(self.store.redis, self.store.key)
        saved = sum(isinstance(outcome, Saved) for outcome in outcomes)
        log.info("%s: %d of %d files of %s taken", self.store.key, saved, len(outcomes), message_ts(message))
        return note, record_id


class OutboxFileSender:
    """send_file's way out (agent.tools.builtin.send_file.FileSender): a notice in the outbox,
    which the delivery worker uploads under a ledger entry of its own, so never twice."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def send(self, path: str, title: str, size: int, call_id: str) -> None:
        name = PurePosixPath(path).name
        self.store.post_notice(FileNotice(path=path, name=name, title=title, size=size, call_id=call_id))
        schedule_delivery(self.store.redis, self.store.key)
