import pytest

from agent import fold
from agent.fold import INTERRUPTED_TOOL_RESULT, HistoryFold
from tests.vectors import ids, messages, vectors_for

FOLD_VECTORS = vectors_for("fold")


@pytest.mark.parametrize("vector", FOLD_VECTORS, ids=ids(FOLD_VECTORS))
def test_fold_vector(vector):
    assert fold(vector["input"]["records"]) == messages(vector["expected"]["output"])


def _call(step, call_id):
    return {
        "type": "context.append_loop_event",
        "event": {
            "type": "tool.call",
            "step_uuid": step,
            "tool_call_id": call_id,
            "name": "Read",
            "args": {},
        },
    }


def _begin(step):
    return {"type": "context.append_loop_event", "event": {"type": "step.begin", "uuid": step}}


def _user(text):
    return {
        "type": "context.append_message",
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "origin": {"kind": "user"}},
    }


def test_unknown_and_malformed_records_are_skipped_and_counted():
    folder = HistoryFold()
    for record in [{"type": "plan_mode.enter"}, {"type": "context.append_message"}, _user("hi")]:
        folder.apply(record)
    assert [m.text() for m in folder.history] == ["hi"]
    assert folder.skipped == 2


def test_settle_closes_pending_calls_then_flushes_deferred_input():
    folder = HistoryFold()
    for record in [_user("go"), _begin("s1"), _call("s1", "c1"), _user("steer")]:
        folder.apply(record)
    folder.settle()
    history = folder.history
    assert [m.role for m in history] == ["user", "assistant", "tool", "user"]
    assert history[2].text() == INTERRUPTED_TOOL_RESULT and history[2].is_error
    assert history[1].partial is None


def test_record_ids_become_message_ids():
    records = [dict(_user("go"), id="1-0"), dict(_begin("s1"), id="2-0")]
    history = fold(records)
    assert [m.id for m in history] == ["1-0", "2-0"]


def test_compaction_replaces_the_prefix_with_the_summary():
    records = [
        _user("a"),
        _user("b"),
        _user("c"),
        {
            "type": "context.apply_compaction",
            "summary": "S",
            "context_summary": "P\nS",
            "compacted_count": 2,
            "id": "9-0",
        },
    ]
    history = fold(records)
    assert [m.text() for m in history] == ["P\nS", "c"]
    assert history[0].origin.kind == "compaction_summary" and history[0].id == "9-0"


def test_fold_continues_from_a_checkpoint_history():
    base = fold([_user("a")])
    assert [m.text() for m in fold([_user("b")], history=base)] == ["a", "b"]
