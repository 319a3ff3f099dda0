"""The 👍/👎 buttons under an answer, and what a click carries back.

A value names the session, the turn whose answer it rates and the vote, so a click needs
nothing from process memory; a value threadline did not write decodes to None.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from jobs.keys import SessionKey

FEEDBACK = "tl_feedback"
Vote = Literal["up", "down"]
TURN_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,200}$")  # what TurnRunner writes (RQ job id, a dot, hex)


@dataclass(frozen=True)
class FeedbackValue:
    session: SessionKey
    turn_id: str
    vote: Vote

    def encode(self) -> str:
        return json.dumps({"s": str(self.session), "t": self.turn_id, "v": self.vote}, separators=(",", ":"))

    @classmethod
    def decode(cls, raw: object) -> FeedbackValue | None:
        try:
            data = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        turn, vote, session = data.get("t"), data.get("v"), data.get("s")
        if not isinstance(turn, str) or not TURN_ID.match(turn) or vote not in ("up", "down"):
            return None
        try:
            key = SessionKey.parse(session) if isinstance(session, str) else None
        except ValueError:
            return None
        return cls(key, turn, vote) if key is not None else None


def feedback_block(session: SessionKey, turn_id: str) -> dict[str, Any]:
    """Slack's feedback buttons (a `context_actions` block), rating the turn's answer."""

    def button(label: str, meaning: str, vote: Vote) -> dict[str, Any]:
        return {
            "text": {"type": "plain_text", "text": label},
            "accessibility_label": meaning,
            "value": FeedbackValue(session, turn_id, vote).encode(),
        }

    element = {
        "type": "feedback_buttons",
        "action_id": FEEDBACK,
        "positive_button": button("👍", "This answer was helpful", "up"),
        "negative_button": button("👎", "This answer was not helpful", "down"),
    }
    return {"type": "context_actions", "elements": [element]}
