"""The thread's agent session in Slack (`agents.sessions.setStatus`, `agents.sessions.rename`).

While a session is `processing` Slack shows its loading state and its own Stop button (a click
arrives as `agent_session_stopped`); `suspended` says the agent waits for a person (a parked
approval); `active` is at rest. Nothing but the app moves a session out of `processing` (Slack
only gives up on it after about an hour), so every end of a turn settles it: an answer, a
failure, a stop, a crash (the janitor's final card). The first time a thread's session works,
it is created titled with the request and renamed to it (Slack may have opened the session
itself, untitled), once: a title a person gives it later stays.

A workspace or app without agent sessions answers `not_agent_app`, `feature_disabled` or
`unknown_method`; that is remembered for the workspace for `OFF_FOR_S`, so no delivery asks
again meanwhile, and the thread keeps only the status line. Any other failure is logged and
said again: `processing` with the running turn's next status refresh, a status that ends or
parks a turn up to MAX_RETRIES times, RETRY_AFTER_S apart. Like the status line, it never
stops a delivery.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from gateway.delivery.ledger import Ledger
from gateway.delivery.timers import deliver_later
from jobs.keys import agent_sessions_off_key
from jobs.session.history import load_fold
from jobs.session.store import SessionStore
from jobs.session.user_input import said_text

log = logging.getLogger(__name__)

PROCESSING, SUSPENDED, ACTIVE = "processing", "suspended", "active"
# Slack's answers when the app or workspace has no agent sessions: asking again will not help.
UNSUPPORTED = frozenset({"not_agent_app", "feature_disabled", "unknown_method"})
OFF_FOR_S = 3600  # long enough to spare every delivery the call; short enough to notice agent_view turned on
REASSERT_AFTER_S = 1800  # Slack drops `processing` after about an hour; a long turn says it again
RETRY_AFTER_S = 90  # a failed call is due again with the next status refresh (status.REFRESH_AFTER_S)
TITLE_MAX_CHARS = 80  # one line of Slack's session list; Slack takes up to 200

STATUS_NOTE = "session_status"  # the status last asked for (noted before the call: it may have landed)
STATUS_AT_NOTE = "session_status_at"  # when it was set; a failed call backdates it to be due soon
TITLED_NOTE = "session_titled"
TRIES_NOTE = "session_status_tries"  # failed calls in a row for the status noted; 0 once one lands
MAX_RETRIES = 5  # then the session is left to Slack's own timeout: no call is retried forever
USER_ID = re.compile(r"^[UW][A-Z0-9]+$")

# Slack escapes "<" inside markup, so markup never holds one: stopping there keeps an unclosed
# "<@<@<@…" to one pass instead of a scan to the end from each "<".
_MENTION = re.compile(r"<[@!][^<>]*>")
_CHANNEL = re.compile(r"<#[A-Z0-9]+\|([^<>]*)>")
_LINK = re.compile(r"<([^|<>]+)(?:\|([^<>]*))?>")


class AgentSession:
    def __init__(self, store: SessionStore, client: WebClient, ledger: Ledger) -> None:
        self.store = store
        self.client = client
        self.ledger = ledger
        self.key = store.key

    def processing(self) -> None:
        """A turn runs: the session says so (Slack's Stop button), titled the first time."""
        status, at, titled = self.ledger.notes(STATUS_NOTE, STATUS_AT_NOTE, TITLED_NOTE)
        if status == PROCESSING and time.time() - float(at or 0) < REASSERT_AFTER_S:
            return
        if self._off() or titled:
            self._set(PROCESSING)
            return
        title = session_title(self._request())
        owner = self.store.meta.read().owner or ""
        initiator = owner if USER_ID.match(owner) else None  # Slack wants a member; a bot is none
        created = self._set(PROCESSING, title=title or None, initiator_user_id=initiator)
        if created and title:
            self._call(self.client.agents_sessions_rename, title=title)
        if created:
            self.ledger.set_note(TITLED_NOTE, "1")

    def suspended(self) -> None:
        """Nothing runs until a person decides (an approval)."""
        if self.ledger.note(STATUS_NOTE) != SUSPENDED:
            self._set(SUSPENDED)

    def active(self) -> None:
        """The turn is over, whichever way: the session leaves `processing` (or `suspended`)."""
        if self.ledger.note(STATUS_NOTE) in (PROCESSING, SUSPENDED):
            self._set(ACTIVE)

    def retry_if_due(self) -> None:
        """Say again a status Slack did not take (a 5xx, a timeout), a few times: a session left
        `processing` would show Stop and "working" for an hour. `processing` itself is said again
        by the next `processing()` (every status refresh while the turn runs)."""
        tries, status, at = self.ledger.notes(TRIES_NOTE, STATUS_NOTE, STATUS_AT_NOTE)
        due = time.time() - float(at or 0) >= REASSERT_AFTER_S
        if 0 < int(tries or 0) <= MAX_RETRIES and status in (SUSPENDED, ACTIVE) and due:
            self._set(status)

    def _off(self) -> bool:
        return bool(self.store.redis.exists(agent_sessions_off_key(self.key.team)))

    def _set(self, status: str, **extra: str | None) -> bool:
        if self._off():
            return False
        self.ledger.set_note(STATUS_NOTE, status)
        args = {name: value for name, value in extra.items() if value}
        done = self._call(self.client.agents_sessions_setStatus, status=status, **args)
        at = time.time() if done else time.time() - REASSERT_AFTER_S + RETRY_AFTER_S
        tries = 0 if done else int(self.ledger.note(TRIES_NOTE) or 0) + 1
        self.ledger.set_notes({STATUS_AT_NOTE: f"{at:.3f}", TRIES_NOTE: str(tries)})
        if tries and not self._off():
            deliver_later(self.store.redis, self.key, "status", RETRY_AFTER_S)
        return done

    def _call(self, method: Callable[..., Any], **args: str) -> bool:
        try:
            method(channel_id=self.key.channel, thread_ts=self.key.thread_ts, **args)
        except SlackApiError as error:
            code = error.response.get("error")
            if code in UNSUPPORTED:
                self.store.redis.set(agent_sessions_off_key(self.key.team), code, ex=OFF_FOR_S)
                log.info("team %s has no agent sessions (%s): the status line only", self.key.team, code)
            else:
                log.info("%s: agent session call failed (%s)", self.key, code)
            return False
        return True

    def _request(self) -> str:
        """The first thing a person asked in the thread (read once per thread, for its title)."""
        for message in load_fold(self.store).history:
            said = said_text(message)
            if said:
                return said
        return ""


def session_title(text: str) -> str:
    """One plain line naming the request: Slack markup resolved, at most TITLE_MAX_CHARS."""
    plain = _MENTION.sub(" ", text)
    plain = _CHANNEL.sub(lambda found: f"#{found.group(1)}", plain)
    plain = _LINK.sub(lambda found: found.group(2) or found.group(1), plain)
    plain = " ".join("".join(ch for ch in plain.replace("`", "") if ch.isprintable() or ch.isspace()).split())
    if len(plain) <= TITLE_MAX_CHARS:
        return plain
    cut = plain[: TITLE_MAX_CHARS - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > TITLE_MAX_CHARS // 2 else cut).rstrip(" ,;:.-") + "…"
