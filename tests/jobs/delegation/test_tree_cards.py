"""A card is composed and passed on in one optimistic transaction (jobs.delegation.tree_cards): a
sub-agent line that lands while the card is composed is in what reaches the thread, with no
lock and no sleep."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis
from redis.client import Pipeline

from jobs.delegation.tree_cards import _LINES, publish_card
from jobs.keys import SessionKey, card_children_key, card_key
from jobs.session.notices import ToolLine, TurnCard
from jobs.session.store import SessionStore

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")


def line(call_id: str, state: str = "running") -> ToolLine:
    return ToolLine.model_validate(
        {"tool_call_id": call_id, "name": "shell", "summary": "make", "state": state}
    )


class LandsWhileComposing(Redis):
    """A real client whose transactions let another party write right after they read the
    sub-agents' lines: the race the card's compose-and-pass-on must win."""

    def __init__(self, redis: Redis, meanwhile: Callable[[], object]) -> None:
        super().__init__(connection_pool=redis.connection_pool)
        self.meanwhile: Callable[[], object] | None = meanwhile

    def hgetall(self, name: Any) -> Any:  # a compose outside a transaction meets the same race
        read = super().hgetall(name)
        self.now_the_other_party()
        return read

    def now_the_other_party(self) -> None:
        if self.meanwhile is not None:
            action, self.meanwhile = self.meanwhile, None
            action()

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Pipeline:
        outer = self

        class Interleaved(Pipeline):
            def hgetall(self, name: Any) -> Any:
                read = super().hgetall(name)
                if not self.explicit_transaction:
                    outer.now_the_other_party()
                return read

        return Interleaved(self.connection_pool, self.response_callbacks, transaction, shard_hint)


def posted_card(store: SessionStore) -> TurnCard:
    snapshot = store.card_snapshot("t1")
    assert snapshot is not None
    return snapshot[1]


@pytest.mark.parametrize("by", ["the stored card", "its reporter's newest"])
def test_a_sub_agent_line_landing_while_the_card_is_composed_is_on_the_card_posted(redis, by):
    store = SessionStore(redis, KEY)
    card = TurnCard(turn_id="t1", state="running", started_at=1.0, updated_at=1.0, tools=[line("a1")])
    if by == "the stored card":
        redis.set(card_key(KEY), card.model_dump_json())
    redis.hset(card_children_key(KEY), "a1", _LINES.dump_json([line("c1")]))

    def a_child_finishes() -> None:
        redis.hset(card_children_key(KEY), "a1", _LINES.dump_json([line("c1", "done"), line("c2")]))

    racing = SessionStore(LandsWhileComposing(redis, a_child_finishes), KEY)
    publish_card(racing, card if by == "its reporter's newest" else None)

    assert TurnCard.model_validate_json(redis.get(card_key(KEY)) or b"") == card  # stored, as composed from

    [agent_line] = posted_card(store).tools
    assert [(child.tool_call_id, child.state) for child in agent_line.children] == [
        ("c1", "done"),
        ("c2", "running"),
    ]


class CountsRoundTrips(Redis):
    """A real client that counts what it sends: each command, each pipeline it executes."""

    def __init__(self, redis: Redis) -> None:
        super().__init__(connection_pool=redis.connection_pool)
        self.sent = 0

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.sent += 1
        return super().execute_command(*args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Pipeline:
        outer = self

        class Counted(Pipeline):
            def immediate_execute_command(self, *args: Any, **options: Any) -> Any:
                outer.sent += 1
                return super().immediate_execute_command(*args, **options)

            def execute(self, raise_on_error: bool = True) -> Any:
                outer.sent += 1
                return super().execute(raise_on_error)

        return Counted(self.connection_pool, self.response_callbacks, transaction, shard_hint)


def test_a_root_card_with_no_sub_agent_lines_is_stored_and_posted_in_one_round_trip(redis):
    counting = CountsRoundTrips(redis)
    store = SessionStore(counting, KEY)
    card = TurnCard(turn_id="t1", state="running", started_at=1.0, updated_at=1.0, tools=[line("a1")])

    publish_card(store, card)
    published_after = counting.sent
    newer = card.model_copy(update={"tools": [line("a1", "done")], "updated_at": 2.0})
    publish_card(store, newer)
    sent_by_the_second = counting.sent - published_after

    assert TurnCard.model_validate_json(redis.get(card_key(KEY)) or b"") == newer
    assert posted_card(store) == newer
    assert [notice.kind for _, notice in store.notices()] == ["progress"]  # one entry, its newest card
    # the card stored and posted in one step, then the delivery scheduled: its claim, and whether
    # the delivery the first publish queued is still to run
    assert sent_by_the_second == 3


def test_a_sub_agent_line_that_lands_between_two_publishes_is_nested_in_the_second(redis):
    store = SessionStore(redis, KEY)
    card = TurnCard(turn_id="t1", state="running", started_at=1.0, updated_at=1.0, tools=[line("a1")])
    publish_card(store, card)
    assert posted_card(store).tools[0].children == []

    redis.hset(card_children_key(KEY), "a1", _LINES.dump_json([line("c1")]))
    publish_card(store, card.model_copy(update={"updated_at": 2.0}))

    assert [child.tool_call_id for child in posted_card(store).tools[0].children] == ["c1"]
    stored = TurnCard.model_validate_json(redis.get(card_key(KEY)) or b"")
    assert stored.tools[0].children == []  # the card as its reporter wrote it
