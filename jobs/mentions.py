"""People in text: Slack's `<@U123>` shown to the model as `@Dana (U123)`, and back.

The model reads names (a raw id says nothing about who asked), with the id beside each so it
can still mention someone. It is told to write `<@U123>` for a mention; when it copies the
`@Dana (U123)` form it read instead, its answer is turned back into `<@U123>` before it is
posted, so the person is notified either way. Pure text: no Slack, no Redis.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# Slack's user mention, with the legacy `|label` some clients and bots still send.
SLACK_MENTION = re.compile(r"<@([UW][A-Z0-9]{2,})(?:\|[^<>]*)?>")
# What the model reads and may copy: `@<name> (<id>)`; a name holds no parentheses or brackets.
# Not inside a word or an address (`dana@example.com (U1)` is left alone).
MODEL_MENTION = re.compile(r"(?<![\w.@])@([^\s()<>@][^()<>@\n]{0,79}?) \(([UW][A-Z0-9]{2,})\)")
NAME_CHARS = 80  # a Slack display name is at most 80 characters


def person(user: str, name: str | None) -> str:
    """How the model sees a person: `@Dana (U123)`, or Slack's `<@U123>` when no name is known."""
    name = clean_name(name)
    return f"@{name} ({user})" if name else f"<@{user}>"


def clean_name(name: str | None) -> str:
    """A display name that cannot break the `@name (id)` form or the line it is on."""
    if not name:
        return ""
    kept = "".join(" " if ch.isspace() else ch for ch in name if ch not in '()<>@&"')
    return " ".join(kept.split())[:NAME_CHARS].strip()


def mentioned_ids(text: str) -> list[str]:
    """The people `text` mentions, once each, in order."""
    return list(dict.fromkeys(SLACK_MENTION.findall(text)))


def for_model(text: str, names: Mapping[str, str]) -> str:
    """Every `<@U123>` whose name is known becomes `@Dana (U123)`; the others stay as they are."""
    return SLACK_MENTION.sub(lambda m: person(m.group(1), names.get(m.group(1))), text)


def for_slack(text: str) -> str:
    """The model's `@Dana (U123)` as Slack's `<@U123>`, a mention Slack shows as the name."""
    return MODEL_MENTION.sub(lambda m: f"<@{m.group(2)}>", text)
