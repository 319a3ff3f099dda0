"""Input: what a person said in a thread, as the gateway hands it to the session.

Recording input (jobs.input) puts it on the session's wire log, or in its inbox while a turn
runs (jobs.session.inbox). It lives here, below both, so the store can read the inbox without
importing the modules that record input.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agent.messages import Message, Origin, TextPart


class UserInput(BaseModel):
    """One Slack message that becomes one user message of the session.

    `message`, when given, is the message itself (a skill a person invoked, a sub-agent's
    answer), delivered as it is instead of the author-prefixed text.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    user: str
    ts: str
    event_id: str | None = None
    message: Message | None = None

    def to_message(self) -> Message:
        if self.message is not None:
            return self.message
        # The author is named in Slack's own syntax, so the model can address them in its answer.
        # Origin keeps kind-specific fields as pydantic extras, which only validation accepts.
        origin = Origin.model_validate({"kind": "user", "user": self.user, "ts": self.ts})
        return Message(role="user", content=[TextPart(text=f"<@{self.user}>: {self.text}")], origin=origin)


def said_text(message: Message) -> str | None:
    """What a person wrote, without the author prefix `to_message` adds; None when the message
    is not a person's input (a skill's prompt, a sub-agent's answer, a summary)."""
    origin = message.origin
    user = (origin.model_extra or {}).get("user") if origin is not None else None
    if origin is None or origin.kind != "user" or not user:
        return None
    return message.text().removeprefix(f"<@{user}>: ")
