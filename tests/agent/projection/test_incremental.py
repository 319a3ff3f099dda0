"""IncrementalProjector gives exactly what project gives, however the history grows or is rewritten."""

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.messages import Message, Origin, TextPart, ToolCall
from agent.projection.anomalies import Anomaly
from agent.projection.incremental import IncrementalProjector
from agent.projection.projector import project, project_strict
from tests.agent.histories import histories

SUMMARY = Message(role="user", content=[TextPart(text="summary")], origin=Origin(kind="compaction_summary"))


def _collect(function, history):
    seen: list[Anomaly] = []
    return function(history, seen.append), seen


def assert_same_as_project(projector: IncrementalProjector, history: list[Message]) -> None:
    assert _collect(projector.project, history) == _collect(project, history)
    settled = projector.settled
    assert 0 <= settled <= len(history)
    # The settled prefix projects, on its own, to the start of the full projection.
    prefix = project(history[:settled])
    assert project(history)[: len(prefix)] == prefix


def _pruned(history: list[Message], index: int) -> list[Message]:
    """A message replaced in the middle, as a tool-result prune record does."""
    pruned = history[index].model_copy(update={"content": [TextPart(text="[pruned]")]})
    return [*history[:index], pruned, *history[index + 1 :]]


def _seal(history: list[Message]) -> list[Message]:
    """What the fold does when a step settles: the open (partial) assistant is replaced."""
    return [m.model_copy(update={"partial": None}) if m.partial is True else m for m in history]


@settings(max_examples=300, deadline=None)
@given(histories, st.data())
def test_incremental_equals_project_on_appends_and_rewrites(history, data):
    projector = IncrementalProjector()
    current: list[Message] = []
    position = 0
    while position < len(history):
        size = data.draw(st.integers(1, 4), label="chunk")
        current = current + history[position : position + size]
        position += size
        action = data.draw(
            st.sampled_from(("append", "append", "append", "seal", "compact", "undo", "prune"))
        )
        if action == "seal":
            current = _seal(current)
        elif action == "compact" and current:
            current = [SUMMARY, *current[data.draw(st.integers(0, len(current)), label="compacted") :]]
        elif action == "undo" and current:
            current = current[: len(current) - data.draw(st.integers(1, len(current)), label="undone")]
        elif action == "prune" and current:
            current = _pruned(current, data.draw(st.integers(0, len(current) - 1), label="pruned"))
        assert_same_as_project(projector, current)


@settings(max_examples=100, deadline=None)
@given(histories)
def test_incremental_strict_equals_project_strict(history):
    projector = IncrementalProjector()
    for end in range(len(history) + 1):
        assert _collect(projector.project_strict, history[:end]) == _collect(project_strict, history[:end])


def _turn(n: int) -> list[Message]:
    call = ToolCall(id=f"call_{n}", name="Read", arguments="{}")
    return [
        Message(role="user", content=[TextPart(text=f"ask {n}")], origin=Origin(kind="user"), id=f"{n}-0"),
        Message(role="assistant", content=[], tool_calls=[call], id=f"{n}-1"),
        Message(role="tool", content=[TextPart(text="ok")], tool_call_id=call.id, id=f"{n}-2"),
        Message(role="assistant", content=[TextPart(text=f"answer {n}")], id=f"{n}-3"),
    ]


def test_a_finished_turn_settles_and_a_new_prompt_does_not():
    projector = IncrementalProjector()
    history = _turn(1) + _turn(2)
    projector.project(history)
    assert projector.settled == 8
    history.append(Message(role="user", content=[TextPart(text="more")], origin=Origin(kind="user")))
    projector.project(history)
    assert projector.settled == 8  # a later user message could still merge into it


def test_an_open_call_holds_the_settled_point_before_its_exchange():
    projector = IncrementalProjector()
    history = _turn(1) + _turn(2)[:2]
    projector.project(history)
    assert projector.settled == 4
    history.extend(_turn(2)[2:])
    assert projector.project(history) == project(history)
    assert projector.settled == 8


def test_a_partial_step_is_never_inside_the_settled_prefix():
    projector = IncrementalProjector()
    step = _turn(2)
    reminder = Message(
        role="user", content=[TextPart(text="<system-reminder>")], origin=Origin(kind="injection")
    )
    history = [*_turn(1), step[1].model_copy(update={"partial": True}), reminder, step[2]]
    projector.project(history)
    assert projector.settled == 4  # not after the reminder: the partial step before it may change
    history = _seal(history)  # the fold seals the step: its result is no longer an orphan
    assert _collect(projector.project, history) == _collect(project, history)


def test_compaction_is_detected_and_projected_from_scratch():
    projector = IncrementalProjector()
    history = _turn(1) + _turn(2) + _turn(3)
    projector.project(history)
    compacted = [SUMMARY, *history[8:]]
    assert projector.project(compacted) == project(compacted)
    assert projector.settled == len(compacted)


def test_a_result_pruned_inside_the_settled_prefix_is_noticed():
    projector = IncrementalProjector()
    history = _turn(1) + _turn(2)
    projector.project(history)
    pruned = _pruned(history, 2)
    assert projector.project(pruned) == project(pruned)
    assert projector.project(pruned)[2].content == [TextPart(text="[pruned]")]


def test_a_reloaded_history_of_equal_copies_keeps_the_prefix():
    projector = IncrementalProjector()
    history = _turn(1) + _turn(2)
    projector.project(history)
    reloaded = [Message.model_validate(message.model_dump()) for message in history]
    assert projector.project(reloaded) == project(history)
    assert projector.settled == 8


def test_reset_forgets_the_settled_prefix():
    projector = IncrementalProjector()
    history = _turn(1)
    projector.project(history)
    projector.reset()
    assert projector.settled == 0
    edited = [history[0], history[1], history[2].model_copy(update={"is_error": True}), history[3]]
    assert projector.project(edited) == project(edited)
