"""What the model reads of a Slack message: people by name, and for a mention that starts a
session in the middle of a thread, the thread so far (gateway.thread_context)."""

from __future__ import annotations

import time
from typing import Protocol

from gateway.deps import Deps
from gateway.thread_context import READ_BUDGET_S, ThreadRead, read_earlier, render
from jobs.keys import SessionKey
from jobs.mentions import for_model, mentioned_ids
from jobs.session.state import session_exists
from jobs.session.user_input import SharedFile, UserInput


class Said(Protocol):
    """What gateway.listeners._inbound.SlackInput holds that this needs."""

    @property
    def key(self) -> SessionKey: ...
    @property
    def user(self) -> str: ...
    @property
    def ts(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def event_id(self) -> str | None: ...
    @property
    def addressed(self) -> bool: ...
    @property
    def agent_user(self) -> str | None: ...
    @property
    def files(self) -> list[SharedFile]: ...


def as_input(deps: Deps, said: Said) -> UserInput:
    """The input the session records: people by name, the thread so far when this starts the
    session mid-thread. Slack's reads here share one budget (gateway.thread_context)."""
    deadline = time.monotonic() + READ_BUDGET_S
    earlier = _earlier(deps, said, deadline) if _starts_mid_thread(deps, said) else None
    people = [said.user, *mentioned_ids(said.text), *(earlier.people if earlier else [])]
    names = deps.people.names(said.key.team, people, deadline)
    context = None
    if earlier is not None:
        settings = deps.settings
        context = render(
            earlier, names, agent_user=said.agent_user,
            max_messages=settings.THREAD_CONTEXT_MESSAGES, max_tokens=settings.THREAD_CONTEXT_TOKENS,
        )  # fmt: skip
    return UserInput(
        text=for_model(said.text, names), user=said.user, ts=said.ts, event_id=said.event_id,
        author_name=names.get(said.user), thread_context=context, files=said.files or None,
    )  # fmt: skip


def _starts_mid_thread(deps: Deps, said: Said) -> bool:
    """A mention (or DM) in a reply, in a thread with no session yet, with context wanted."""
    settings = deps.settings
    wanted = settings.THREAD_CONTEXT_MESSAGES > 0 and settings.THREAD_CONTEXT_TOKENS > 0
    mid_thread = said.addressed and said.ts != said.key.thread_ts
    return wanted and mid_thread and not session_exists(deps.redis, said.key)


def _earlier(deps: Deps, said: Said, deadline: float) -> ThreadRead:
    return read_earlier(deps.reader, said.key.channel, said.key.thread_ts, said.ts, deadline)
