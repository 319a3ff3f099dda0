"""Input: what a person said in a thread, as the gateway hands it to the session.

Recording input (jobs.input) puts it on the session's wire log, or in its inbox while a turn
runs (jobs.session.inbox). It lives here, below both, so the store can read the inbox without
importing the modules that record input.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from agent.messages import Message, Origin, TextPart

FILES_FIELD = "files"  # the Origin extra that lists a message's shared files (jobs.turn.uploads)


class SharedFile(BaseModel):
    """A file shared with a Slack message, as the event described it: nothing here is checked
    yet (the worker downloads it under its own limits, jobs.turn.uploads)."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    mimetype: str = ""
    size: int = 0
    url: str = ""  # url_private_download, else url_private; empty when Slack gave none


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
    # None rather than []: the inbox's scripts decode and re-encode this JSON in Lua, whose cjson
    # writes an empty list back as {}.
    files: list[SharedFile] | None = None

    def to_message(self) -> Message:
        if self.message is not None:
            return self.message
        # The author is named in Slack's own syntax, so the model can address them in its answer.
        # Origin keeps kind-specific fields as pydantic extras, which only validation accepts.
        fields: dict[str, Any] = {"kind": "user", "user": self.user, "ts": self.ts}
        if self.files:
            fields[FILES_FIELD] = [shared.model_dump() for shared in self.files]
        origin = Origin.model_validate(fields)
        return Message(role="user", content=[TextPart(text=f"<@{self.user}>: {self.text}")], origin=origin)
