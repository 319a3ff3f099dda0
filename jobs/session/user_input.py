"""Input: what a person said in a thread, as the gateway hands it to the session.

Recording input (jobs.input) puts it on the session's wire log, or in its inbox while a turn
runs (jobs.session.inbox). It lives here, below both, so the store can read the inbox without
importing the modules that record input.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent.messages import Message, Origin, TextPart
from jobs.mentions import person

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
    answer), delivered as it is instead of the author-prefixed text. `author_name` is the
    author's display name when Slack gave one (`text` already shows the people it mentions by
    name, jobs.mentions); `thread_context` the earlier messages of the thread, quoted, when this
    input started a session in the middle of one (gateway.thread_context).
    """

    model_config = ConfigDict(frozen=True)

    text: str
    user: str
    ts: str
    event_id: str | None = None
    message: Message | None = None
    author_name: str | None = None
    thread_context: str | None = None
    # None rather than []: the inbox's scripts decode and re-encode this JSON in Lua, whose cjson
    # writes an empty list back as {}.
    files: list[SharedFile] | None = None

    def to_message(self) -> Message:
        if self.message is not None:
            return self.message
        # The author by name with their id, so the model knows who asked and can mention them.
        # Origin keeps kind-specific fields as pydantic extras, which only validation accepts.
        fields: dict[str, Any] = {"kind": "user", "user": self.user, "ts": self.ts}
        if self.files:
            fields[FILES_FIELD] = [shared.model_dump() for shared in self.files]
        origin = Origin.model_validate(fields)
        said = f"{person(self.user, self.author_name)}: {self.text}"
        if self.thread_context:
            said = f"{self.thread_context}\n\n{said}"
        return Message(role="user", content=[TextPart(text=said)], origin=origin)


def said_text(message: Message) -> str | None:
    """What a person wrote, without the quoted thread and the author prefix `to_message` adds;
    None when the message is not a person's input (a skill's prompt, a sub-agent's answer, a
    summary)."""
    origin = message.origin
    user = (origin.model_extra or {}).get("user") if origin is not None else None
    if origin is None or origin.kind != "user" or not user:
        return None
    said = message.text()
    # At the start, or after the quoted thread, whose every line starts with "> ".
    author = re.compile(rf"(?:^|\n\n)(?:<@{re.escape(user)}>|@[^\n]*? \({re.escape(user)}\)): ")
    found = author.search(said)
    return said[found.end() :] if found else said
