"""Notices: what a turn wants the thread to show, queued in the session's outbox stream.

The turn writes notices; the delivery job (gateway) renders and posts them in order.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Notice(BaseModel):
    model_config = ConfigDict(frozen=True)

    turn_id: str | None = None


class AnswerNotice(_Notice):
    """The model's answer, in Markdown."""

    kind: Literal["answer"] = "answer"
    text: str


class ErrorNotice(_Notice):
    """A turn could not finish: a short apology and what went wrong."""

    kind: Literal["error"] = "error"
    text: str


Notice = Annotated[AnswerNotice | ErrorNotice, Field(discriminator="kind")]
_NOTICE = TypeAdapter(Notice)


def parse_notice(raw: bytes | str) -> Notice:
    return _NOTICE.validate_json(raw)
