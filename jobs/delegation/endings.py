"""A sub-agent's turn ended: its answer goes back to whoever waits for it.

Foreground: the parent's parked call gets the answer as its result (the last one to answer
enqueues the parent's continuation). Swarm: the item's outcome is recorded and the next item
starts. Background: the answer is delivered to the parent as input, which starts a turn when
the parent is idle, or steers the running one.
"""

from __future__ import annotations

import logging

from agent.delegation.results import ChildEnd, ChildOutcome, background_message
from agent.loop.ports import TurnOutcome
from jobs.delegation.children import ChildInfo, child_info, finished
from jobs.delegation.swarms import Swarm
from jobs.delegation.waits import StepWaits
from jobs.input import route_input
from jobs.queues import queue_turn
from jobs.session.state import PARKED_STATES, state_of
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput

log = logging.getLogger(__name__)

ENDS: dict[str, ChildEnd] = {
    "completed": "completed",
    "failed": "failed",
    "timed_out": "failed",
    "cancelled": "cancelled",
    "interrupted": "lost",
}


def child_turn_ended(store: SessionStore, outcome: TurnOutcome, *, turn_timeout_s: int) -> None:
    """Called when a turn of a sub-agent ends for good (not when it parks)."""
    info = child_info(store)
    if info is None:
        return
    error = outcome.error if outcome.reason != "timed_out" else f"it hit its time limit ({outcome.error})"
    result = ChildOutcome(ENDS.get(outcome.reason, "failed"), info.description, outcome.answer, error)
    deliver(store, info, result, turn_timeout_s=turn_timeout_s)


def child_lost(store: SessionStore, *, turn_timeout_s: int) -> None:
    """The janitor found the sub-agent's worker dead: its parent hears that the outcome is unknown."""
    info = child_info(store)
    if info is not None:
        deliver(store, info, ChildOutcome("lost", info.description), turn_timeout_s=turn_timeout_s)


def deliver(store: SessionStore, info: ChildInfo, outcome: ChildOutcome, *, turn_timeout_s: int) -> None:
    redis = store.redis
    finished(redis, info, store.key)
    parent = SessionStore(redis, info.parent)
    if info.mode == "foreground":
        StepWaits(parent).complete(info.call_id, outcome.as_result(), turn_timeout_s=turn_timeout_s)
    elif info.mode == "swarm" and info.item is not None:
        Swarm(parent, info.call_id).item_ended(info.item, outcome, turn_timeout_s)
    else:
        _inject(parent, info, outcome, turn_timeout_s)
    log.info("sub-agent %s ended (%s); told %s", store.key, outcome.end, info.parent)


def _inject(parent: SessionStore, info: ChildInfo, outcome: ChildOutcome, turn_timeout_s: int) -> None:
    message = background_message(info.agent_id, outcome)
    ts = f"agent:{info.agent_id}:{info.call_id}"
    arrival = UserInput(text=message.text(), user="agent", ts=ts, message=message)
    where = route_input(parent, arrival)
    if where != "wire" or state_of(parent) in PARKED_STATES:
        return  # a running turn takes it from the inbox; a parked one finds it on the wire
    queue_turn(parent, turn_timeout_s=turn_timeout_s)
