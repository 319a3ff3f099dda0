"""What a person sees in the fake Slack: bot messages of a thread, their text and buttons."""

from __future__ import annotations

from typing import Any

from gateway.sandbox.fake_slack import FakeSlack


def bot_messages(fake: FakeSlack, channel: str, thread_ts: str) -> list[dict[str, Any]]:
    return [m for m in fake.thread(channel, thread_ts) if m.get("bot_id")]


def shown(message: dict[str, Any]) -> str:
    """The words on screen: the blocks when there are any (Slack then shows only those), else the text."""
    blocks = message.get("blocks") or []
    if not blocks:
        return message.get("text") or ""
    return "\n".join(_block_text(block) for block in blocks if _block_text(block))


def buttons(message: dict[str, Any]) -> dict[str, str]:
    """Label → value of every button on the message."""
    found = {}
    for block in message.get("blocks") or []:
        for element in block.get("elements") or []:
            if element.get("type") == "button":
                found[element["text"]["text"]] = element["value"]
    return found


def thread_texts(fake: FakeSlack, channel: str, thread_ts: str) -> list[str]:
    return [shown(m) for m in bot_messages(fake, channel, thread_ts)]


def ephemerals(fake: FakeSlack, user: str | None = None) -> list[dict[str, Any]]:
    with fake.state.lock:
        return [e for e in fake.state.ephemeral if user is None or e["user"] == user]


def responses(fake: FakeSlack) -> list[dict[str, Any]]:
    """Posts to response_url (the ephemeral answers to clicks and shortcuts)."""
    with fake.state.lock:
        return list(fake.state.responses)


def _block_text(block: dict[str, Any]) -> str:
    if block.get("type") == "section":
        return (block.get("text") or {}).get("text", "")
    if block.get("type") == "markdown":
        return block.get("text", "")
    if block.get("type") == "context":
        return " ".join(e.get("text", "") for e in block.get("elements") or [])
    return ""
