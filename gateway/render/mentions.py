"""Broadcast mentions in what threadline posts, broken before Slack sees them.

The model's words are a prompt injection's voice (a file, a fetched page, a thread reply), and
Slack notifies a whole channel for `<!channel>`, `<!here>`, `<!everyone>`, `<!group>` (the old
name of `<!channel>`) and a user group for `<!subteam^S…>`, each with or without a `|label`,
in any case; under `link_names` or its own automatic parsing also for the bare words `@channel`,
`@here` and `@everyone`. Each is broken by a zero-width space (`BREAK`, U+200B) after its first
character: `<`, U+200B, `!channel>`. People see what was written; Slack parses no command in it.
What notifies one person or nobody stays as written: a person's mention `<@U…>` (the model
names whom it answers), a channel link `<#C…>`, a date `<!date^…>`, `<!DOCTYPE html>`.

Whether a break goes in depends only on the `LOOKAHEAD` characters after its mark, never on what
came before, so text that grows (a streamed step) is broken the same however it is cut: the
pieces of a stream are `neutralised_between` two offsets of the text so far, and only a mark
within the last `LOOKAHEAD` characters waits for more (`settled`).

`PostingRules` is what one channel allows: its broadcasts (SLACK_BROADCAST_CHANNELS) and link
previews (SLACK_UNFURL). gateway.delivery applies them to every message, stream chunk, file title
and status line it sends into a thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gateway.render.text import SECTION_LIMIT

BREAK = "\u200b"  # zero-width space: invisible, and no Slack command or word survives it
# The mark (`<` or `@`) that would start a broadcast; the break goes right after it.
_BROADCAST = re.compile(r"<(?=!(?:channel|here|everyone|group|subteam\^))|@(?=channel|here|everyone)", re.I)
LOOKAHEAD = len("!subteam^")  # the most characters after a mark that decide it (as "!everyone")
_MARKS = "<@"


def neutralise(text: str) -> str:
    """`text` with every broadcast mention broken (idempotent: a broken one stays as it is)."""
    return _BROADCAST.sub(lambda found: found[0] + BREAK, text)


def neutralised_between(text: str, start: int, end: int) -> str:
    """`text[start:end]` as it reads inside `neutralise(text)`: the marks in it decided by what
    follows them in `text`, past `end` too."""
    shown, at = [], start
    for found in _BROADCAST.finditer(text, start):
        if found.start() >= end:
            break
        shown.append(text[at : found.end()] + BREAK)
        at = found.end()
    shown.append(text[at:end])
    return "".join(shown)


def settled(text: str, end: int, start: int = 0) -> int:
    """How far (at most `end`) a text still being written can be sent now, from `start` (sent
    already): up to the first mark whose fate the characters to come decide."""
    for at in range(max(start, len(text) - LOOKAHEAD), min(end, len(text))):
        if text[at] in _MARKS:
            return at
    return end


@dataclass(frozen=True)
class PostingRules:
    """What one channel allows of the text threadline posts there."""

    broadcasts: bool = False  # its broadcast mentions reach Slack as written
    unfurl: bool = False  # Slack may preview (fetch) the links and media in its messages

    def text(self, text: str) -> str:
        return text if self.broadcasts else neutralise(text)

    def between(self, text: str, start: int, end: int) -> str:
        return text[start:end] if self.broadcasts else neutralised_between(text, start, end)

    def arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """chat.postMessage / chat.update arguments with every text a person sees neutralised:
        `text`, `markdown_text` and each `text` inside the blocks (a button's value is data)."""
        return arguments if self.broadcasts else _shown_texts(arguments)


def _shown_texts(value: Any) -> Any:
    if isinstance(value, list):
        return [_shown_texts(item) for item in value]
    if not isinstance(value, dict):
        return value
    shown = {
        name: neutralise(item) if isinstance(item, str) and name in _TEXT_FIELDS else _shown_texts(item)
        for name, item in value.items()
    }
    if value.get("type") in _TEXT_OBJECTS and isinstance(shown.get("text"), str):
        # A break is a character more: a section written up to Slack's limit stays within it.
        shown["text"] = shown["text"][:SECTION_LIMIT]
    return shown


_TEXT_FIELDS = frozenset({"text", "markdown_text", "title", "details", "output", "fallback", "alt_text"})
_TEXT_OBJECTS = frozenset({"mrkdwn", "plain_text"})
