import logging

from agent.messages import Message, Origin, TextPart, ToolCall
from agent.projection.projector import project, project_strict
from agent.projection.report import REPAIRED_MESSAGE, ProjectionReporter

LOGGER = "agent.projection.report"


def _user(text: str) -> Message:
    return Message(role="user", content=[TextPart(text=text)], origin=Origin(kind="user"))


def _assistant(*ids: str) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id=i, name="Read", arguments="{}") for i in ids])


def _result(call_id: str) -> Message:
    return Message(role="tool", content=[TextPart(text="ok")], tool_call_id=call_id)


REMINDER = Message(role="user", content=[TextPart(text="<system-reminder>")], origin=Origin(kind="injection"))
# c1's result arrives after a reminder (reordered); "ghost" has no call (orphan).
BROKEN = [_user("go"), _assistant("c1"), REMINDER, _result("c1"), _result("ghost"), _user("next")]
CLEAN = [_user("go"), _assistant("c1"), _result("c1")]
IN_FLIGHT = [_user("go"), _assistant("c1")]


def _warnings(caplog) -> list[logging.LogRecord]:
    return [
        record for record in caplog.records if record.name == LOGGER and record.levelno == logging.WARNING
    ]


def _project(reporter: ProjectionReporter, history: list[Message]) -> None:
    project(history, reporter)
    reporter.report()


def test_one_warning_line_with_signature_counters_and_call_ids(caplog):
    reporter = ProjectionReporter()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        _project(reporter, BROKEN)
    [record] = _warnings(caplog)
    assert record.getMessage() == (
        f"{REPAIRED_MESSAGE}: signature=orphan_tool_result_dropped:ghost|tool_result_reordered:c1"
        " reordered=1 synthesized=0 dropped_orphan=1 duplicate_calls_dropped=0"
        " duplicate_results_dropped=0 leading_dropped=0 assistants_merged=0 whitespace_dropped=0"
        " vacuous_dropped=0 tool_call_ids=c1,ghost"
    )
    assert record.projection_repair["tool_call_ids"] == ["c1", "ghost"]


def test_the_same_repair_is_logged_once_until_a_clean_projection(caplog):
    reporter = ProjectionReporter()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        _project(reporter, BROKEN)
        _project(reporter, BROKEN)
        assert len(_warnings(caplog)) == 1
        _project(reporter, CLEAN)
        _project(reporter, BROKEN)
    assert len(_warnings(caplog)) == 2


def test_a_different_repair_is_logged_again(caplog):
    reporter = ProjectionReporter()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        _project(reporter, BROKEN)
        _project(reporter, [*BROKEN, _result("ghost2")])
    assert len(_warnings(caplog)) == 2


def test_an_in_flight_call_is_not_a_repair_and_resets_the_signature(caplog):
    reporter = ProjectionReporter()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        _project(reporter, IN_FLIGHT)
        assert _warnings(caplog) == []
        _project(reporter, BROKEN)
        _project(reporter, IN_FLIGHT)
        _project(reporter, BROKEN)
    assert len(_warnings(caplog)) == 2


def test_counters_cover_strict_repairs_and_at_most_five_call_ids_are_named(caplog):
    events = []
    reporter = ProjectionReporter(telemetry=lambda name, fields: events.append((name, fields)))
    ids = [f"g{n}" for n in range(7)]
    history = [Message(role="assistant", content=[TextPart(text="hi")]), *map(_result, ids), _user("go")]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        project_strict(history, reporter)
        repair = reporter.report()
    assert repair is not None
    assert repair.counters["dropped_orphan"] == 7 and repair.counters["leading_dropped"] == 1
    assert repair.tool_call_ids == ids[:5]
    [(name, fields)] = events
    assert name == "context_projection_repaired" and fields["dropped_orphan"] == 7
    assert len(_warnings(caplog)) == 1
