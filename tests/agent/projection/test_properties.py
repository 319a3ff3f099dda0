"""Properties of project / project_strict on random and loop-shaped histories."""

import copy
from itertools import pairwise

from hypothesis import given, settings

from agent.messages import Message
from agent.projection._projected_message import CONTEXT_FIELDS
from agent.projection.anomalies import Anomaly
from agent.projection.projector import project, project_strict
from tests.agent.histories import histories
from tests.agent.projection_oracle import oracle_project

EXAMPLES = settings(max_examples=300, deadline=None)


def _has_assistant(history: list[Message]) -> bool:
    return any(message.role == "assistant" and message.partial is not True for message in history)


def assert_wire_valid(output: list[Message]) -> None:
    """Every call is followed right away by exactly one result per call, in call order; no other
    tool message exists."""
    position = 0
    while position < len(output):
        message = output[position]
        assert message.role != "tool", f"result without its call at {position}"
        call_ids = [call.id for call in message.tool_calls]
        following = output[position + 1 : position + 1 + len(call_ids)]
        assert [(m.role, m.tool_call_id) for m in following] == [("tool", i) for i in call_ids]
        position += 1 + len(call_ids)


def _collect(function, history):
    seen: list[Anomaly] = []
    return function(history, seen.append), seen


@EXAMPLES
@given(histories)
def test_project_matches_a_literal_reading_of_the_spec(history):
    output, seen = _collect(project, history)
    expected_output, expected_anomalies = oracle_project(history)
    assert output == expected_output
    assert seen == expected_anomalies


@EXAMPLES
@given(histories)
def test_project_output_is_wire_valid_and_input_untouched(history):
    before = copy.deepcopy(history)
    dumped = [message.model_dump() for message in history]
    output = project(history)
    assert history == before and [message.model_dump() for message in history] == dumped
    if _has_assistant(history):
        assert_wire_valid(output)
    for message in output:
        assert all(getattr(message, name) is None for name in CONTEXT_FIELDS)
        assert message.partial is not True


@EXAMPLES
@given(histories)
def test_project_is_repeatable(history):
    first, first_anomalies = _collect(project, history)
    again, again_anomalies = _collect(project, history)  # now from the memoised forms
    assert again == first and again_anomalies == first_anomalies


@EXAMPLES
@given(histories)
def test_project_strict_starts_with_a_user_and_keeps_calls_unique(history):
    before = copy.deepcopy(history)
    output = project_strict(history)
    assert history == before
    assert not output or output[0].role == "user"
    if _has_assistant(history):
        assert_wire_valid(output)
        call_ids = [call.id for message in output for call in message.tool_calls]
        assert len(call_ids) == len(set(call_ids))
    roles = [message.role for message in output]
    assert ("assistant", "assistant") not in pairwise(roles)
