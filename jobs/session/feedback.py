"""👍/👎 on a turn's answer: who rated it, how and when, one rating per person and turn (the
latest click counts). `/agent status` shows the tally and the latest ratings."""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel
from redis import Redis

from jobs.keys import SessionKey, feedback_key

Vote = Literal["up", "down"]
SHOWN_LATEST = 3  # `/agent status` names the latest few ratings; the tally counts all


class Feedback(BaseModel):
    turn_id: str
    user: str
    vote: Vote
    at: float


def record_feedback(redis: Redis, key: SessionKey, turn_id: str, user: str, vote: Vote) -> Feedback:
    feedback = Feedback(turn_id=turn_id, user=user, vote=vote, at=time.time())
    redis.hset(feedback_key(key), f"{turn_id}:{user}", feedback.model_dump_json())
    return feedback


def all_feedback(redis: Redis, key: SessionKey) -> list[Feedback]:
    """Every rating of the session's answers, oldest first."""
    ratings = [Feedback.model_validate_json(raw) for raw in redis.hvals(feedback_key(key))]
    return sorted(ratings, key=lambda one: one.at)
