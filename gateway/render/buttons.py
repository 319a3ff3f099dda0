"""The buttons threadline puts on its messages, and what each carries back when clicked.

A button's value names the session (and the approval or tool call) it acts on, so a click
needs nothing from process memory; the listener still checks the clicker may act.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from jobs.keys import SessionKey

STOP = "tl_stop"
RESUME = "tl_resume"
APPROVE = "tl_approve"
DENY = "tl_deny"
INSPECT = "tl_inspect"
STOP_SHORTCUT = "tl_stop_run"  # the message shortcut "Stop agent run"

Style = Literal["primary", "danger"]


@dataclass(frozen=True)
class ButtonValue:
    session: SessionKey
    approval_id: str | None = None
    tool_call_id: str | None = None

    def encode(self) -> str:
        data = {"s": str(self.session), "a": self.approval_id, "c": self.tool_call_id}
        return json.dumps({k: v for k, v in data.items() if v}, separators=(",", ":"))

    @classmethod
    def decode(cls, raw: object) -> ButtonValue | None:
        """None for a value threadline did not write (or an old, unreadable one)."""
        try:
            data = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("s"), str):
            return None  # JSON, but not the object encode() writes
        try:
            session = SessionKey.parse(data["s"])
        except ValueError:  # not three ids, or one that is not a Slack id
            return None
        return cls(session, _text_or_none(data.get("a")), _text_or_none(data.get("c")))


def button(action_id: str, label: str, value: ButtonValue, style: Style | None = None) -> dict[str, Any]:
    element: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": label, "emoji": True},
        "value": value.encode(),
    }
    if style:
        element["style"] = style
    return element


def actions(*elements: dict[str, Any]) -> dict[str, Any]:
    return {"type": "actions", "elements": list(elements)}


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
