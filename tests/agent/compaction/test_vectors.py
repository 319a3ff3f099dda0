"""Every compaction vector of the spec, run against the Python functions."""

import pytest

from agent.compaction.rules import (
    can_split_after,
    compute_compact_count,
    reduce_compact_on_overflow,
    should_block,
    should_compact,
)
from agent.compaction.shape import compaction_shape, history_safe_to_compact
from agent.compaction.shrink import drop_oldest_message, shrink_history_after_overflow
from agent.messages import Message
from tests.agent.compaction_harness import config, estimator, indexes_of
from tests.vectors import ids, messages, vectors_for

COUNT = vectors_for("compute_compact_count")
TRIGGER = vectors_for("should_compact")
SPLIT = vectors_for("can_split_after")
OVERFLOW = vectors_for("reduce_compact_on_overflow")
SAFE = vectors_for("history_safe_to_compact")
SHRINK = vectors_for("shrink_history_after_overflow")
DROP = vectors_for("drop_oldest_message")
SHAPE = vectors_for("compaction_shape")


def test_every_compaction_function_has_vectors():
    groups = [COUNT, TRIGGER, SPLIT, OVERFLOW, SAFE, SHRINK, DROP, SHAPE]
    assert all(groups)
    assert sum(map(len, groups)) == 38


@pytest.mark.parametrize("vector", COUNT, ids=ids(COUNT))
def test_compute_compact_count(vector):
    given = vector["input"]
    history = messages(given["messages"])
    count = compute_compact_count(
        history,
        given["source"],
        given["max_size"],
        config(given.get("config")),
        estimator(given.get("estimator"), history),
    )
    assert count == vector["expected"]["output"]


@pytest.mark.parametrize("vector", TRIGGER, ids=ids(TRIGGER))
def test_should_compact_and_should_block(vector):
    given = vector["input"]
    settings = config(given.get("config"))
    observed = [
        {
            "used": used,
            "should_compact": should_compact(used, given["max_size"], settings),
            "should_block": should_block(used, given["max_size"], settings),
        }
        for used in given["used"]
    ]
    assert observed == vector["expected"]["output"]


@pytest.mark.parametrize("vector", SPLIT, ids=ids(SPLIT))
def test_can_split_after(vector):
    history = messages(vector["input"]["messages"])
    assert [can_split_after(history, i) for i in range(len(history))] == vector["expected"]["output"]


@pytest.mark.parametrize("vector", OVERFLOW, ids=ids(OVERFLOW))
def test_reduce_compact_on_overflow(vector):
    given = vector["input"]
    history = messages(given["messages"])
    count = reduce_compact_on_overflow(
        history, given["max_size"], config(given.get("config")), estimator(given.get("estimator"), history)
    )
    assert count == vector["expected"]["output"]


def _current_history(given):
    """The vector's original history after its edits: replaced, shrunk, or with messages appended."""
    original = messages(given["original"])
    current = list(original)
    for index in given.get("replace", []):
        current[index] = Message.model_validate(original[index].model_dump())
        assert current[index] == original[index] and current[index] is not original[index]
    if given.get("remove_last"):
        current = current[: -given["remove_last"]]
    current += messages(given.get("appended", []))
    return original, current


@pytest.mark.parametrize("vector", SAFE, ids=ids(SAFE))
def test_history_safe_to_compact(vector):
    original, current = _current_history(vector["input"])
    assert history_safe_to_compact(current, original) is vector["expected"]["output"]


@pytest.mark.parametrize("vector", SHRINK, ids=ids(SHRINK))
def test_shrink_history_after_overflow(vector):
    given = vector["input"]
    history = messages(given["messages"])
    kept = shrink_history_after_overflow(
        history, given["attempt"], estimator(given.get("estimator"), history)
    )
    assert indexes_of(kept, history) == vector["expected"]["output"]


@pytest.mark.parametrize("vector", DROP, ids=ids(DROP))
def test_drop_oldest_message(vector):
    history = messages(vector["input"]["messages"])
    assert indexes_of(drop_oldest_message(history), history) == vector["expected"]["output"]


@pytest.mark.parametrize("vector", SHAPE, ids=ids(SHAPE))
def test_compaction_shape(vector):
    history = messages(vector["input"]["history"])
    shape = compaction_shape(history, **vector["input"]["input"])
    expected = dict(vector["expected"]["output"])
    assert shape.messages == messages(expected.pop("messages"))
    assert shape.model_dump(exclude={"messages"}) == expected
