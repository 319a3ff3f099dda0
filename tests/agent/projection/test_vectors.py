"""Every spec vector for the projector, strict projection, fork closing, rendering and token estimate."""

import copy

import pytest
from pydantic import TypeAdapter

from agent.messages import ContentPart, Message
from agent.projection.anomalies import Anomaly
from agent.projection.incremental import IncrementalProjector
from agent.projection.inherited import close_trailing_open_tool_exchange
from agent.projection.projector import project, project_strict
from agent.projection.rendering import render_tool_result
from agent.tokens import estimate_message, estimate_text
from tests.vectors import ids, messages, vectors_for

PARTS = TypeAdapter(list[ContentPart])
PROJECT = vectors_for("project")
STRICT = vectors_for("project_strict")
CLOSE = vectors_for("close_trailing_open_tool_exchange")
RENDER = vectors_for("render_tool_result")
ESTIMATE = vectors_for("estimate_text")


def _anomalies(vector):
    return [Anomaly.model_validate(item) for item in vector["expected"]["anomalies"]]


def _run(function, history):
    """Call `function` on `history`, asserting the history is left exactly as it was."""
    before = copy.deepcopy(history)
    dumped = [message.model_dump() for message in history]
    seen: list[Anomaly] = []
    output = function(history, seen.append)
    assert history == before
    assert [message.model_dump() for message in history] == dumped
    return output, seen


def test_every_projector_vector_is_covered():
    assert (len(PROJECT), len(STRICT), len(CLOSE), len(RENDER), len(ESTIMATE)) == (22, 7, 8, 6, 10)


@pytest.mark.parametrize("vector", PROJECT, ids=ids(PROJECT))
def test_project_vector(vector):
    output, seen = _run(project, messages(vector["input"]["history"]))
    assert output == messages(vector["expected"]["output"])
    assert seen == _anomalies(vector)


@pytest.mark.parametrize("vector", PROJECT, ids=ids(PROJECT))
def test_project_vector_output_has_only_wire_keys(vector):
    output = project(messages(vector["input"]["history"]))
    dumped = [message.model_dump(mode="json", exclude_none=True) for message in output]
    assert dumped == vector["expected"]["output"]


@pytest.mark.parametrize("vector", PROJECT, ids=ids(PROJECT))
def test_project_vector_without_a_sink_gives_the_same_output(vector):
    assert project(messages(vector["input"]["history"])) == messages(vector["expected"]["output"])


@pytest.mark.parametrize("vector", PROJECT, ids=ids(PROJECT))
def test_project_vector_incrementally(vector):
    history = messages(vector["input"]["history"])
    projector = IncrementalProjector()
    for end in range(len(history) + 1):
        projector.project(history[:end])
    output, seen = _run(projector.project, history)
    assert output == messages(vector["expected"]["output"])
    assert seen == _anomalies(vector)


@pytest.mark.parametrize("vector", STRICT, ids=ids(STRICT))
def test_project_strict_vector(vector):
    output, seen = _run(project_strict, messages(vector["input"]["history"]))
    assert output == messages(vector["expected"]["output"])
    assert seen == _anomalies(vector)


@pytest.mark.parametrize("vector", STRICT, ids=ids(STRICT))
def test_project_strict_vector_incrementally(vector):
    output, seen = _run(IncrementalProjector().project_strict, messages(vector["input"]["history"]))
    assert output == messages(vector["expected"]["output"])
    assert seen == _anomalies(vector)


@pytest.mark.parametrize("vector", CLOSE, ids=ids(CLOSE))
def test_close_trailing_open_tool_exchange_vector(vector):
    history = messages(vector["input"]["history"])
    output, _ = _run(lambda h, _sink: close_trailing_open_tool_exchange(h), history)
    assert output == messages(vector["expected"]["output"])


@pytest.mark.parametrize("vector", RENDER, ids=ids(RENDER))
def test_render_tool_result_vector(vector):
    given = vector["input"]
    output = given["output"] if isinstance(given["output"], str) else PARTS.validate_python(given["output"])
    rendered = render_tool_result(output, is_error=given.get("is_error"), note=given.get("note"))
    assert rendered == PARTS.validate_python(vector["expected"]["output"])


@pytest.mark.parametrize("vector", ESTIMATE, ids=ids(ESTIMATE))
def test_estimate_vector(vector):
    given = vector["input"]
    if "text" in given:
        assert estimate_text(given["text"]) == vector["expected"]["output"]
    else:
        assert estimate_message(Message.model_validate(given["message"])) == vector["expected"]["output"]
