"""How every threadline process logs: one line per record, redacted (`agent.redaction`), with the
team, channel, thread, turn and job it belongs to (`jobs.log_context`).

`LOG_FORMAT=text` (the default) is for people: the usual line, then the fields as `key=value`.
`LOG_FORMAT=json` is for a log pipeline: one object per line with `ts`, `level`, `logger`,
`message`, the fields, and `exc` for a traceback. Both go through `redact_text` last.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime
from typing import Any

from agent.redaction import redact_text
from jobs.log_context import RECORD_ATTRIBUTE, ContextFilter
from jobs.settings import Settings

RQ_WORKER_LOGGER = "rq.worker"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# A value made of these is shown bare; anything else (a newline, a space, `=`) is quoted, so a
# hostile id can neither forge a line nor a field.
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_.:\-]+")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SPELLED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
TRACEBACK_INDENT = "  "  # a traceback's lines: never mistaken for a record's, which starts with its time


def configure_logging(settings: Settings) -> None:
    """The one logging set-up of web, worker and Socket Mode: LOG_LEVEL and LOG_FORMAT."""
    handler = logging.StreamHandler()
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter() if settings.LOG_FORMAT == "json" else TextFormatter(TEXT_FORMAT))
    logging.basicConfig(level=settings.LOG_LEVEL, handlers=[handler], force=True)
    # RQ's worker logger says at INFO what each job did, in its own templates; threadline's lines
    # say it with the session (a job taken, a turn's end, a post), so RQ's speaks from WARNING up,
    # and all of it at LOG_LEVEL=DEBUG. (RQ sets that logger to INFO when first imported.)
    logging.getLogger(RQ_WORKER_LOGGER).setLevel(rq_worker_level(settings.LOG_LEVEL))


def rq_worker_level(log_level: str) -> int:
    """The level of RQ's worker logger under LOG_LEVEL `log_level`: WARNING or above, DEBUG too."""
    level = logging.getLevelNamesMapping()[log_level]
    return level if level == logging.DEBUG else max(logging.WARNING, level)


def context_of(record: logging.LogRecord) -> dict[str, str]:
    fields = getattr(record, RECORD_ATTRIBUTE, None)
    if not isinstance(fields, dict):
        return {}
    return {name: redact_text(str(value)) for name, value in fields.items()}


class TextFormatter(logging.Formatter):
    """The usual line with ` team=T1 channel=C1 thread=T1:C1:1700.1 turn=… job=…` after it.

    A record is one line: every value in it (a file name, an error's text) has its control
    characters escaped (`\\n`, `\\x1b`), so none can end the line early or forge another. A
    traceback follows on lines of its own, each indented (`TRACEBACK_INDENT`), so no line of it
    passes for a record either; then the whole goes through `redact_text`."""

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        fields = "".join(f" {name}={_plain(value)}" for name, value in context_of(record).items())
        line = escape_controls(self.formatMessage(record)) + fields
        return redact_text(line + "".join(f"\n{TRACEBACK_INDENT}{row}" for row in self._traceback(record)))

    def _traceback(self, record: logging.LogRecord) -> list[str]:
        shown = []
        if record.exc_info:
            shown.append(self.formatException(record.exc_info))
        if record.stack_info:
            shown.append(self.formatStack(record.stack_info))
        return [escape_controls(row) for part in shown for row in part.split("\n")]


class JsonFormatter(logging.Formatter):
    """One JSON object per record; a traceback is the `exc` field, not more lines."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact_text(record.getMessage()),
            **context_of(record),
        }
        if record.exc_info:
            line["exc"] = redact_text(self.formatException(record.exc_info))
        elif record.stack_info:
            line["exc"] = redact_text(self.formatStack(record.stack_info))
        return json.dumps(line, ensure_ascii=False)


def _plain(value: str) -> str:
    return value if _PLAIN_VALUE.fullmatch(value) else json.dumps(value)


def escape_controls(text: str) -> str:
    """`text` on one line: C0 and C1 control characters, DEL and the Unicode line and paragraph
    separators spelled as Python would (`\\n`, `\\x1b`, `\\u2028`); everything else as written."""
    return _CONTROL.sub(lambda found: _SPELLED.get(found[0]) or _code(found[0]), text)


def _code(char: str) -> str:
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
