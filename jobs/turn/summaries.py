"""Short, safe forms of tool calls for people to read in the thread."""

from __future__ import annotations

import json
from typing import Any

from agent.tools.arguments import parse_tool_call_arguments

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
    """The arguments as the tools read them (agent.tools.arguments); None when they are not JSON."""
    parsed = parse_tool_call_arguments(arguments)
    return None if parsed.parse_failed else parsed.data


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def full_arguments(name: str, arguments: str | None) -> str:
    """What a person must read to approve a call, never cut: the key argument whole, else pretty JSON.

    Whether it fits a Slack message is the card's business (gateway.render.approval_card): a
    call it cannot show whole cannot be approved there.
    """
    parsed = _parse(arguments)
    key = KEY_ARGUMENT.get(name)
    if isinstance(parsed, dict) and key in parsed and len(parsed) == 1:
        return str(parsed[key])
    if parsed is None:
        return arguments or ""
    return json.dumps(parsed, ensure_ascii=False, indent=2)
