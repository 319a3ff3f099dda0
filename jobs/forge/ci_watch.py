"""The pull request card's CI line, as the forge reports it after the push.

After each push whose CI has not settled, a job due in `CI_POLL_S` reads the forge's combined
status of the pushed commit again; a change edits the thread's card. It looks again until the
status settles (success, failure, error) or `CI_POLLS` looks have passed, and stops as soon as
a newer push took over the card. The job is kept in Redis (RQ's scheduled registry), so a
restart of every worker keeps the watch.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

from redis import Redis

from jobs import runtime
from jobs.forge.api import ForgeRefused
from jobs.forge.forges import open_forge
from jobs.forge.record import read_record, save_record, show_card
from jobs.forge.tokens import forge_token
from jobs.keys import SessionKey
from jobs.queues import TURNS_QUEUE, queue
from jobs.session.store import SessionStore

CI_WATCH_JOB = "jobs.forge.ci_watch.watch_ci"
CI_POLL_S = 60
CI_POLLS = 30  # half an hour of CI; a longer run keeps its last state on the card
SETTLED_CI = frozenset({"success", "failure", "error"})


def schedule_ci_watch(redis: Redis, key: SessionKey, head: str, polls_left: int = CI_POLLS) -> None:
    due = datetime.fromtimestamp(math.ceil(time.time() + CI_POLL_S), UTC)
    queue(redis, TURNS_QUEUE).enqueue_at(
        due, CI_WATCH_JOB, str(key), head, polls_left, result_ttl=0, failure_ttl=24 * 3600
    )


def watch_ci(session_key: str, head: str, polls_left: int) -> str:
    """RQ job: the CI status of `head` read again; the card edited when it changed."""
    store = SessionStore(runtime.redis_client(), SessionKey.parse(session_key))
    record = read_record(store)
    if record is None or record.head != head:
        return "a newer push watches its own CI"
    state = ci_state(store.key, record.card.repo, head)
    if state is not None and state != record.card.ci:
        record = record.model_copy(update={"card": record.card.model_copy(update={"ci": state})})
        save_record(store, record)
        show_card(store, record.card)
    if state in SETTLED_CI or polls_left <= 1:
        return f"CI of {head[:12]}: {state or 'not reported'}"
    schedule_ci_watch(store.redis, store.key, head, polls_left - 1)
    return f"CI of {head[:12]}: {state or 'not reported'} so far"


def ci_state(key: SessionKey, repo: str, head: str) -> str | None:
    settings = runtime.settings()
    channel_repo = settings.CHANNEL_REPOS.get(key.channel)
    if channel_repo is None or channel_repo.forge is None:
        return None
    try:
        token = forge_token(settings, channel_repo)
    except ForgeRefused:
        return None
    # The repository the pull request was opened on, even if the channel's entry changed since.
    with open_forge(settings, channel_repo.forge, repo, token) as forge:
        return forge.ci_state(head)
