"""The thread's pull request as kept in Redis (`pull_request_key`) and shown in its card."""

from __future__ import annotations

from pydantic import BaseModel

from jobs.keys import pull_request_key
from jobs.queues import schedule_delivery
from jobs.session.notices import PullRequestNotice
from jobs.session.store import SessionStore


class PullRequestRecord(BaseModel):
    """The thread's pull request as its card last showed it, and the commit it was pushed at."""

    card: PullRequestNotice
    head: str


def read_record(store: SessionStore) -> PullRequestRecord | None:
    raw = store.redis.get(pull_request_key(store.key))
    return PullRequestRecord.model_validate_json(raw) if raw else None


def save_record(store: SessionStore, record: PullRequestRecord) -> None:
    store.redis.set(pull_request_key(store.key), record.model_dump_json())


def show_card(store: SessionStore, card: PullRequestNotice) -> None:
    """The card, posted once and edited after (gateway.delivery.notices)."""
    store.post_notice(card)
    schedule_delivery(store.redis, store.key)
