"""Parsing the raw argument string of a tool call (context-core.md §4.1): no repair, no defaulting of null."""

from __future__ import annotations

import json
import logging
from typing import Any, NamedTuple

log = logging.getLogger(__name__)


class ParsedArguments(NamedTuple):
    data: Any
    parse_failed: bool = False
    error: str | None = None


def _reject_constant(name: str) -> Any:
    # JSON has no NaN or Infinity; Python's json would accept them where JSON.parse does not.
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def parse_tool_call_arguments(raw: Any) -> ParsedArguments:
    """None or "" → {}; a non-string is passed through; invalid JSON → {} with parse_failed.

    Non-object JSON ("5", "null", "[1,2]") is returned as parsed; schema validation rejects it.
    """
    if raw is None or raw == "":
        return ParsedArguments({})
    if not isinstance(raw, str):
        return ParsedArguments(raw)
    try:
        return ParsedArguments(_DECODER.decode(raw))
    except ValueError as error:
        log.debug("tool call arguments are not valid JSON: %s", error)
        return ParsedArguments({}, True, str(error))
    except RecursionError:  # json recurses per bracket: arguments nested deeper than Python's stack
        return ParsedArguments({}, True, "nested too deeply")
