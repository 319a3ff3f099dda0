"""Short, safe forms of tool calls for people to read in the thread."""

from __future__ import annotations

import json
from typing import Any

SUMMARY_CHARS = 80  # one line on a progress card
# The argument that says most about a call, per built-in tool.
KEY_ARGUMENT = {
    "shell": "command",
    "read_file": "path",
    "write_file": "path",
    "edit_file": "path",
    "list_dir": "path",
    "glob": "pattern",
    "grep": "pattern",
    "http_get": "url",
    "Agent": "description",
    "Skill": "skill",
}


def short_arguments(name: str, arguments: str | None, limit: int = SUMMARY_CHARS) -> str:
    """`command: make test` style for known tools, compact JSON otherwise, cut to `limit` chars."""
    parsed = _parse(arguments)
    key = KEY_ARGUMENT.get(name)
    if isinstance(parsed, dict) and key in parsed:
        return _cut(f"{key}: {parsed[key]}", limit)
    if parsed is None:
        return _cut(arguments or "", limit)
    return _cut(json.dumps(parsed, ensure_ascii=False, separators=(",", ":")), limit)


def _parse(arguments: str | None) -> Any:
    if not arguments:
        return {}
    try:
        return json.loads(arguments)
    except ValueError:
        return None


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


DETAILS_CHARS = 2_500  # fits a Slack section (3,000) with the code fence around it


def full_arguments(name: str, arguments: str | None, limit: int = DETAILS_CHARS) -> str:
    """What a person must read to approve a call: the key argument whole, else pretty JSON."""
    parsed = _parse(arguments)
    key = KEY_ARGUMENT.get(name)
    if isinstance(parsed, dict) and key in parsed and len(parsed) == 1:
        text = str(parsed[key])
    elif parsed is None:
        text = arguments or ""
    else:
        text = json.dumps(parsed, ensure_ascii=False, indent=2)
    return text if len(text) <= limit else text[: limit - 1] + "…"
