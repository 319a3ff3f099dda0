"""Every notice other than a progress snapshot, as a message posted once (or an edit of one).

An approval card is posted under the ledger entry `approval:<id>` so its decision can edit it;
a compaction's "started" message is edited into its outcome; the thread's pull request card
(ledger entry `pull_request`) is edited by each later push.
"""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError

from gateway.delivery.answers import post_answer
from gateway.delivery.files import post_session_file
from gateway.delivery.ledger import Ledger
from gateway.delivery.poster import ThreadPoster
from gateway.delivery.status import AssistantStatus
from gateway.delivery.streams import StepStreams
from gateway.render import approval_card
from gateway.render import notices as render
from gateway.render.notices import SlackMessage
from jobs.session.notices import (
    AnswerNotice,
    ApprovalDecidedNotice,
    ApprovalRequestNotice,
    CancelledNotice,
    CompactionNotice,
    ErrorNotice,
    FileNotice,
    InfoNotice,
    Notice,
    PullRequestNotice,
    ReactionNotice,
    UnknownResultNotice,
)

# Slack's answers that mean the reaction is already as wanted, or cannot be: never retried.
REACTION_ERRORS_TO_SKIP = frozenset(
    {"already_reacted", "no_reaction", "message_not_found", "missing_scope", "not_reactable", "invalid_name"}
)
log = logging.getLogger(__name__)

COMPACTION_MESSAGE = "compaction_message"  # ledger note: ts of the running compaction's message
PULL_REQUEST_CARD = "pull_request"  # ledger entry: the thread's pull request card


class NoticePosting:
    def __init__(self, poster: ThreadPoster, status: AssistantStatus, streams: StepStreams) -> None:
        self.poster = poster
        self.streams = streams
        self.ledger = poster.ledger
        self.status = status
        self.session = poster.key

    def post(self, notice_id: str, notice: Notice) -> None:
        if isinstance(notice, AnswerNotice):
            if not self.streams.answered(notice):  # a streamed answer is in the thread already
                post_answer(self.poster, notice_id, notice.text)
            self.status.clear()
        elif isinstance(notice, ApprovalRequestNotice):
            self._approval_request(notice)
        elif isinstance(notice, ApprovalDecidedNotice):
            self._approval_decided(notice_id, notice)
        elif isinstance(notice, CompactionNotice):
            self._compaction(notice_id, notice)
        elif isinstance(notice, ReactionNotice):
            self._react(notice)
        elif isinstance(notice, FileNotice):
            post_session_file(self.poster, notice_id, notice)
        elif isinstance(notice, PullRequestNotice):
            self._pull_request(notice)
        else:
            self._simple(notice_id, notice)

    def _simple(self, notice_id: str, notice: Notice) -> None:
        if isinstance(notice, UnknownResultNotice):
            self._post(notice_id, render.unknown_result(notice, self.session))
        elif isinstance(notice, CancelledNotice):
            self._post(notice_id, render.cancelled(notice, self.session))
            self.status.clear()
        elif isinstance(notice, ErrorNotice):
            self._post(notice_id, render.error(notice))
            self.status.clear()
        elif isinstance(notice, InfoNotice):
            self._post(notice_id, render.info(notice))

    def _react(self, notice: ReactionNotice) -> None:
        """Idempotent by nature: a reaction already there, or one already gone, is what was
        wanted. A message deleted meanwhile, or a token without `reactions:write`, loses only
        the reaction. Not paced with the posts: reactions are not messages (Slack limits them
        apart; a 429 still waits out Retry-After like any call)."""
        where = {"channel": self.session.channel, "timestamp": notice.message_ts}
        calls = [
            (self.poster.client.reactions_remove, notice.remove),
            (self.poster.client.reactions_add, notice.add),
        ]
        for call, name in calls:
            if name is None:
                continue
            try:
                call(name=name, **where)
            except SlackApiError as error:
                code = error.response.get("error")
                if code not in REACTION_ERRORS_TO_SKIP:
                    raise
                log.info("%s: reaction %s on %s skipped (%s)", self.session, name, notice.message_ts, code)

    def _approval_request(self, notice: ApprovalRequestNotice) -> None:
        entry = f"approval:{notice.approval_id}"
        self.ledger.set_note(_request_note(notice.approval_id), notice.model_dump_json())
        self._post(entry, approval_card.approval_request(notice, self.session))
        self.status.parked()  # nothing runs while a person decides

    def _approval_decided(self, notice_id: str, notice: ApprovalDecidedNotice) -> None:
        entry = f"approval:{notice.approval_id}"
        request = shown_request(self.ledger, notice.approval_id)
        message = approval_card.approval_decided(notice, request)
        card = self.ledger.ts(entry)
        if card is None:
            self._post(notice_id, message)
        else:
            self.poster.update(card, message)

    def _pull_request(self, notice: PullRequestNotice) -> None:
        """One card per thread (one pull request per thread): posted once, then edited."""
        message = render.pull_request(notice)
        card = self.ledger.ts(PULL_REQUEST_CARD)
        if card is None:
            self._post(PULL_REQUEST_CARD, message)
        else:
            self.poster.update(card, message)

    def _compaction(self, notice_id: str, notice: CompactionNotice) -> None:
        message = render.compaction(notice)
        running = self.ledger.note(COMPACTION_MESSAGE)
        if notice.state == "started":
            ts, _ = self.poster.post_once(notice_id, message)
            self.ledger.set_note(COMPACTION_MESSAGE, ts)
            return
        if running:
            self.poster.update(running, message)
            self.ledger.set_note(COMPACTION_MESSAGE, "")
        else:
            self._post(notice_id, message)

    def _post(self, entry: str, message: SlackMessage) -> None:
        _, posted = self.poster.post_once(entry, message)
        if posted:
            self.status.message_posted()


def shown_request(ledger: Ledger, approval_id: str) -> ApprovalRequestNotice | None:
    """The approval request as its card was posted (noted just before); None if it never was."""
    raw = ledger.note(_request_note(approval_id))
    return ApprovalRequestNotice.model_validate_json(raw) if raw else None


def _request_note(approval_id: str) -> str:
    return f"approval:{approval_id}:request"
