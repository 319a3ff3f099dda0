"""Progress cards of a delegation tree: sub-agents' tool lines nested under their parent's call.

Every session's reporter keeps its card (`card` key) in Redis. A sub-agent's card is not
posted anywhere: its lines are written into its parent's `card_children` hash (one field per
Agent call, or per swarm item) and the parent's card is published again with them nested
under the line of the call that started the sub-agent (`ToolLine.children`), recursively up
to the root, whose card is the one the thread shows. Each session's compose-and-pass-on is one
optimistic transaction (WATCH the card and its sub-agents' lines, compose, MULTI/EXEC; again
when either changed meanwhile), so what reaches the outbox or the parent is never composed from
a state older than one already passed on. The session's own reporter, the card's only writer,
stores its newest card in that transaction and watches only the lines (four round trips, not
six). A root session's reporter whose card has no sub-agent lines, the common case, stores and
posts it in one script instead (one round trip). Nothing waits on a lock or sleeps.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from pydantic import TypeAdapter
from redis import Redis
from redis.client import Pipeline
from redis.exceptions import WatchError

from agent.loop.ports import CallsDeferred, StepStarted, TurnEvent
from jobs.delegation.children import ChildInfo, child_info
from jobs.keys import card_children_key, card_key
from jobs.queues import schedule_delivery
from jobs.redis_text import text
from jobs.session.notices import ToolLine, ToolState, TurnCard
from jobs.session.store import SessionStore
from jobs.turn.progress import ProgressReporter
from jobs.turn.publisher import Publisher

log = logging.getLogger(__name__)

WAITING_NOTE = "waiting for {count} sub-agent call(s)…"
CARD_ATTEMPTS = 10  # past this a snapshot is passed on untransacted: late beats lost
ITEM_SEPARATOR = "#"
_LINES = TypeAdapter(list[ToolLine])
CARD_TO_LINE: dict[str, ToolState] = {
    "running": "running",
    "done": "done",
    "failed": "failed",
    "timed_out": "failed",
    "cancelled": "aborted",
    "interrupted": "unknown",
    "awaiting_approval": "awaiting_approval",
}


class CardReporter(ProgressReporter):
    """The turn's card, stored so sub-agents can nest under it; `resume` continues a parked card."""

    def __init__(
        self,
        store: SessionStore,
        turn_id: str,
        resume: TurnCard | None = None,
        publisher: Publisher | None = None,
    ) -> None:
        super().__init__(store, turn_id, publisher=publisher)
        self.base_steps = 0
        if resume is None:  # a new card: lines of earlier cards' sub-agents do not belong on it
            store.redis.delete(card_children_key(store.key))
        else:
            self.card = resume.model_copy(update={"state": "running", "note": None})
            self.base_steps = resume.steps

    def report(self, event: TurnEvent) -> None:
        if isinstance(event, CallsDeferred):
            self._update(note=WAITING_NOTE.format(count=len(event.calls)))
        elif isinstance(event, StepStarted):
            self._update(steps=self.base_steps + event.step, note=None)
        else:
            super().report(event)

    def _post_card(self) -> None:
        publish_card(self.store, self.card)


def stored_card(store: SessionStore) -> TurnCard | None:
    raw = store.redis.get(card_key(store.key))
    return TurnCard.model_validate_json(raw) if raw else None


def publish_card(store: SessionStore, card: TurnCard | None = None) -> None:
    """Compose the session's card with its sub-agents' lines and pass it on: to the thread for a
    root session, into the parent's card for a sub-agent. `card` is its reporter's newest, stored
    in the same transaction (only the reporter writes it); without it, the stored one."""
    info = child_info(store)
    if info is None and card is not None and store.post_own_card(card):
        schedule_delivery(store.redis, store.key)  # no sub-agent lines: stored and posted at once
        return
    parent = SessionStore(store.redis, info.parent) if info is not None else None
    for _ in range(CARD_ATTEMPTS):
        with store.redis.pipeline() as pipe:
            try:
                if not _pass_on(store, pipe, parent, info, card):
                    return
                break
            except WatchError:  # a newer card or sub-agent line landed meanwhile: compose again
                continue
    else:
        log.warning("the card of %s kept changing while it was composed; passed on as it was", store.key)
        _pass_on(store, store.redis, parent, info, card)
    if parent is None:
        schedule_delivery(store.redis, store.key)
    else:
        publish_card(parent)


def _pass_on(
    store: SessionStore,
    client: Redis | Pipeline,
    parent: SessionStore | None,
    info: ChildInfo | None,
    card: TurnCard | None = None,
) -> bool:
    """One optimistic compose-and-pass-on (on a pipeline: watched, then one transaction); False
    when the session has no card."""
    keys = [card_key(store.key), card_children_key(store.key)]
    fresh = card is not None  # the reporter's newest: stored with what it passes on
    if isinstance(client, Pipeline):
        client.watch(*(keys[1:] if fresh else keys))  # type: ignore[no-untyped-call]  # untyped in redis-py
    if card is None:
        raw = client.get(keys[0])
        if raw is None:
            return False
        card = TurnCard.model_validate_json(raw)
    composed = compose(card, _decoded(client.hgetall(keys[1])))
    if isinstance(client, Pipeline):
        client.multi()
    if fresh:
        client.set(keys[0], card.model_dump_json())
    if parent is None or info is None:
        store.post_card_in(client, composed)
    else:
        field, lines = _lines_for_parent(info, composed)
        client.hset(card_children_key(parent.key), field, _LINES.dump_json(lines))
    if isinstance(client, Pipeline):
        client.execute()
    return True


def child_lines(store: SessionStore) -> dict[str, list[ToolLine]]:
    return _decoded(store.redis.hgetall(card_children_key(store.key)))


def _decoded(raw: dict[Any, Any]) -> dict[str, list[ToolLine]]:
    return {text(field): _LINES.validate_json(value) for field, value in raw.items()}


def compose(card: TurnCard, children: dict[str, list[ToolLine]]) -> TurnCard:
    if not children:
        return card
    tools = []
    for line in card.tools:
        nested = _nested(line.tool_call_id, children)
        tools.append(line.model_copy(update={"children": nested}) if nested else line)
    return card.model_copy(update={"tools": tools})


def _nested(call_id: str, children: dict[str, list[ToolLine]]) -> list[ToolLine]:
    own = children.get(call_id, [])
    prefix = call_id + ITEM_SEPARATOR
    items = sorted(
        (int(field[len(prefix) :]), lines) for field, lines in children.items() if field.startswith(prefix)
    )
    return [*own, *(line for _, lines in items for line in lines)]


def _lines_for_parent(info: ChildInfo, card: TurnCard) -> tuple[str, list[ToolLine]]:
    if info.item is None:
        return info.call_id, card.tools
    field = f"{info.call_id}{ITEM_SEPARATOR}{info.item}"
    line = ToolLine(
        tool_call_id=field,
        name="agent",
        summary=_one_line(info.description),
        state=CARD_TO_LINE.get(card.state, "running"),
        started_at=card.started_at,
        ended_at=None if card.state == "running" else card.updated_at,
        children=card.tools,
    )
    return field, [line]


def _one_line(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def close_card(store: SessionStore, state: str) -> None:
    """Publish the stored card in a final state (a parked turn stopped from outside)."""
    card = stored_card(store)
    if card is None:
        return
    tools = [
        line.model_copy(update={"state": "aborted"}) if line.state == "running" else line
        for line in card.tools
    ]
    final = card.model_copy(update={"state": state, "tools": tools, "note": None, "updated_at": time.time()})
    store.redis.set(card_key(store.key), final.model_dump_json())
    publish_card(store)
