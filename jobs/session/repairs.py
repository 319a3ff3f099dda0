"""Projection repairs on the session's record: what the projection had to fix in the history to
keep a model request valid (context-core.md §2.6), kept once per distinct repair.

A repair means the wire log holds something it should not (a result without its call, a call
answered twice, results out of order): worth seeing on the session, not only in a worker's log.
A history that stays broken is repaired again before every request of every turn, so a repair is
recorded once: by its kind and the calls it touched, with the turn and step that first needed
it. Kinds about a message's role (a leading assistant message dropped, whitespace dropped) touch
no call and are recorded once per session. `threadline status --thread` lists them
(`repairs_of`).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping

from pydantic import BaseModel, ValidationError
from redis import Redis

from jobs.keys import SessionKey, repairs_key
from jobs.session.store import SessionStore

log = logging.getLogger(__name__)

# A session whose history keeps breaking in new ways shows its first 100; the warnings in the
# worker's log name every one.
MAX_RECORDED = 100
MAX_CALL_IDS = 20  # per record; `calls` says how many there were
MAX_CALL_ID_CHARS = 128  # call ids come from the model: one longer than any provider's is cut


class Repair(BaseModel):
    kind: str
    call_ids: list[str]
    calls: int
    turn_id: str
    step: int
    at_ms: int

    def summary(self) -> str:
        """`orphan_tool_result_dropped (calls ghost, c2) at step 3 of turn-ab.12cd34`, for status."""
        more = self.calls - len(self.call_ids)
        calls = ", ".join(self.call_ids) + (f" and {more} more" if more else "")
        touched = f" (calls {calls})" if calls else ""
        return f"{self.kind}{touched} at step {self.step} of {self.turn_id}"


def record_repairs(
    store: SessionStore, turn_id: str, step: int, call_ids_by_kind: Mapping[str, list[str]]
) -> list[Repair]:
    """Keep each kind of repair the projection for `step` made, unless the session has it already;
    returns those kept now."""
    now = int(time.time() * 1000)
    kept = []
    for kind, call_ids in call_ids_by_kind.items():
        shown = [call_id[:MAX_CALL_ID_CHARS] for call_id in call_ids]
        repair = Repair(
            kind=kind, call_ids=shown[:MAX_CALL_IDS], calls=len(shown), turn_id=turn_id, step=step, at_ms=now
        )
        if _recorded_once(store.redis, store.key, repair, _digest(shown, len(shown))):
            kept.append(repair)
    return kept


def _recorded_once(redis: Redis, key: SessionKey, repair: Repair, digest: str) -> bool:
    """The one place a repair joins the session's record (a metric counting repairs goes here).
    One writer per session (the turn holding the lease), so the cap needs no script."""
    if redis.hlen(repairs_key(key)) >= MAX_RECORDED:
        return False
    return bool(redis.hsetnx(repairs_key(key), f"{repair.kind}:{digest}", repair.model_dump_json()))


def repairs_of(redis: Redis, key: SessionKey) -> list[Repair]:
    """The session's recorded repairs, oldest first."""
    repairs = []
    for raw in redis.hvals(repairs_key(key)):
        try:
            repairs.append(Repair.model_validate_json(raw))
        except ValidationError:  # written by another version: left out, not fatal to status
            log.warning("a projection repair of %s could not be read; left out", key)
    return sorted(repairs, key=lambda repair: (repair.at_ms, repair.step, repair.kind))


def _digest(call_ids: list[str], count: int) -> str:
    joined = "\n".join(sorted(call_ids)) + f"\n{count}"
    return hashlib.sha1(joined.encode(), usedforsecurity=False).hexdigest()[:16]
