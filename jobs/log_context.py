"""Which team, channel, thread, turn and job a log line belongs to, without passing loggers around.

The fields live in a context variable. Entry points bind them (`bound`): web for a Slack request,
the RQ worker for a job, the turn runner for its turn, the janitor for each session it sweeps.
Every module, `agent/` included, logs with the standard `logging` module; `ContextFilter` on the
process's handler copies the fields onto each record, so a model retry or a tool crash names its
thread and turn for free.

A context variable follows the work by itself within a thread and into tasks and `to_thread`
calls (they copy the context); where work crosses to another thread or an event loop that does
not copy it, the caller hands its context over explicitly (`jobs.turn.host`, `in_context`).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, TypeVar

from jobs.keys import SessionKey

T = TypeVar("T")

FIELDS = ("team", "channel", "thread", "turn", "job")  # the order lines show them in
RECORD_ATTRIBUTE = "threadline_context"  # where ContextFilter puts the fields on a LogRecord
# Ids come from Slack payloads and RQ; one longer than this is not an id and is cut short.
MAX_VALUE_CHARS = 200

_NONE: Mapping[str, str] = MappingProxyType({})
_fields: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar("tl_log_fields", default=_NONE)
_in_scope: contextvars.ContextVar[bool] = contextvars.ContextVar("tl_log_scope", default=False)


def current() -> Mapping[str, str]:
    """The fields bound here, in FIELDS order."""
    return _fields.get()


@contextmanager
def bound(**fields: str | None) -> Iterator[None]:
    """Bind `fields` (None or empty leaves a field as it is) for the lines logged inside."""
    token = _fields.set(_merged(fields))
    try:
        yield
    finally:
        _fields.reset(token)


@contextmanager
def scope(**fields: str | None) -> Iterator[None]:
    """`bound`, and a scope `bind` may add fields to until it ends (a request, whose thread is
    known only once a listener has read the payload)."""
    scoped = _in_scope.set(True)
    try:
        with bound(**fields):
            yield
    finally:
        _in_scope.reset(scoped)


def bind(**fields: str | None) -> None:
    """Add `fields` until the enclosing `scope` ends; outside a scope it does nothing, so a
    binding can never outlive the work it describes (a pool thread's next request)."""
    merged = _merged(fields)
    if _in_scope.get():
        _fields.set(merged)


def session_fields(key: SessionKey) -> dict[str, str]:
    return {"team": key.team, "channel": key.channel, "thread": str(key)}


def in_context(work: Callable[..., T]) -> Callable[..., T]:
    """`work`, to run in another thread with the caller's fields (a thread starts with none)."""
    context = contextvars.copy_context()

    def run(*args: Any, **kwargs: Any) -> T:
        return context.run(work, *args, **kwargs)

    return run


class ContextFilter(logging.Filter):
    """Copies the bound fields onto every record the handler it is added to emits."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, RECORD_ATTRIBUTE):
            setattr(record, RECORD_ATTRIBUTE, dict(current()))
        return True


def _merged(fields: Mapping[str, str | None]) -> Mapping[str, str]:
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise ValueError(f"not a log context field: {', '.join(sorted(unknown))}")
    merged = {**current(), **{name: str(value)[:MAX_VALUE_CHARS] for name, value in fields.items() if value}}
    return MappingProxyType({name: merged[name] for name in FIELDS if name in merged})
