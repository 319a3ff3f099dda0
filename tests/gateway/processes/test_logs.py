"""Every process logs through one set-up: LOG_LEVEL, LOG_FORMAT, context fields, redaction."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from gateway.processes.logs import configure_logging
from jobs import log_context
from jobs.settings import Settings

TOKEN = "xoxb-123456789012-abcdefABCDEF"


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """The process's one handler, writing to a buffer; the root logger is put back afterwards."""
    root, rq_worker = logging.getLogger(), logging.getLogger("rq.worker")
    before = (root.level, root.handlers[:], rq_worker.level)
    root.handlers.clear()  # pytest's own handlers stay open, out of configure_logging's reach
    stream = io.StringIO()
    yield stream
    root.handlers[:] = before[1]
    root.setLevel(before[0])
    rq_worker.setLevel(before[2])


def configured(stream: io.StringIO, **env: str) -> None:
    configure_logging(Settings(**env))  # type: ignore[arg-type]  # pydantic-settings takes the fields
    logging.getLogger().handlers[0].setStream(stream)  # type: ignore[attr-defined]


def test_json_lines_carry_the_bound_fields_and_no_token(captured: io.StringIO) -> None:
    configured(captured, LOG_FORMAT="json")
    with log_context.bound(team="T1", channel="C1", thread="T1:C1:1.0", turn="t-1", job="j1"):
        try:
            raise RuntimeError(f"Slack said no to {TOKEN}")
        except RuntimeError:
            logging.getLogger("agent.tools.executor").exception("tool %s crashed", "grep")
    line = json.loads(captured.getvalue())
    shown = ("level", "logger", "message", "team", "channel", "thread", "turn", "job")
    assert {k: line[k] for k in shown} == {
        "level": "ERROR",
        "logger": "agent.tools.executor",
        "message": "tool grep crashed",
        "team": "T1",
        "channel": "C1",
        "thread": "T1:C1:1.0",
        "turn": "t-1",
        "job": "j1",
    }
    assert line["ts"].endswith("+00:00") and "RuntimeError" in line["exc"]
    assert TOKEN not in captured.getvalue()


def test_text_lines_end_with_the_fields_and_quote_a_hostile_value(captured: io.StringIO) -> None:
    configured(captured, LOG_FORMAT="text")
    with log_context.bound(team="T1", channel="C1\nforged=1"):
        logging.getLogger("jobs.turn.runner").warning("turn ended")
    [line] = captured.getvalue().splitlines()
    assert line.endswith('turn ended team=T1 channel="C1\\nforged=1"')


def test_log_level_leaves_out_what_is_less_severe(captured: io.StringIO) -> None:
    configured(captured, LOG_LEVEL="warning")
    logging.getLogger("jobs.janitor").info("swept")
    logging.getLogger("jobs.janitor").warning("lost a turn")
    lines = captured.getvalue().splitlines()
    assert [line.split(" ", 2)[2] for line in lines] == ["WARNING jobs.janitor: lost a turn"]


@pytest.mark.parametrize(("level", "shown"), [("warning", []), ("info", []), ("debug", ["DEBUG", "INFO"])])
def test_rqs_worker_logger_speaks_from_warning_up_and_all_of_it_under_debug(
    captured: io.StringIO, level: str, shown: list[str]
) -> None:
    """RQ sets that logger to INFO as it is imported (rq.worker.base, imported by now); its per-job
    lines are threadline's own at INFO (gateway.processes.concurrent_worker)."""
    configured(captured, LOG_LEVEL=level)
    logging.getLogger("rq.worker").debug("Worker w1: dequeued job j1 from turns")
    logging.getLogger("rq.worker").info("Worker w1: turns: run_turn (j1)")
    assert [line.split(" ", 3)[2] for line in captured.getvalue().splitlines()] == shown


def test_an_unknown_log_format_is_a_settings_error() -> None:
    with pytest.raises(ValueError, match="LOG_FORMAT"):
        Settings(LOG_FORMAT="xml")  # type: ignore[arg-type]


def test_a_text_line_escapes_control_characters_in_every_value_it_carries(captured: io.StringIO) -> None:
    """A shared file's name is the sharer's: a newline in it must not forge a line of its own."""
    configured(captured, LOG_FORMAT="text")
    forged = (
        "a.txt\n2026-12-05 06:16:27,085 ERROR jobs.turn.runner: forged\r\x1b[2J\x00\x7f\x85\u2028\u2029end"
    )
    with log_context.bound(team="T1", thread="T1:C1:1.0"):
        logging.getLogger("jobs.turn.uploads").info("shared file %s (%s) refused: %s", "F1", forged, "no")
        try:
            raise ValueError("bad\nname")
        except ValueError:
            logging.getLogger("jobs.turn.uploads").exception("failed on %s", "x\ny")
    first, second, *traceback = captured.getvalue().splitlines()
    assert first.endswith(
        "INFO jobs.turn.uploads: shared file F1 (a.txt\\n2026-12-05 06:16:27,085 ERROR jobs.turn.runner: "
        "forged\\r\\x1b[2J\\x00\\x7f\\x85\\u2028\\u2029end) refused: no team=T1 thread=T1:C1:1.0"
    )
    assert second.endswith("ERROR jobs.turn.uploads: failed on x\\ny team=T1 thread=T1:C1:1.0")
    # A traceback keeps its lines, each indented: none can pass for a record of its own.
    assert traceback[0] == "  Traceback (most recent call last):"
    assert traceback[-2:] == ["  ValueError: bad", "  name"]
    assert all(line.startswith("  ") for line in traceback)
