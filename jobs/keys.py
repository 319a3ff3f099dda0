"""Session identity and the Redis key layout (DESIGN.md "Redis layout").

All of a session's keys share one hash tag, `{team:channel:thread_ts}`, so a Redis Cluster
keeps a session on one slot and the Lua scripts that touch several of its keys stay legal.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator

PREFIX = "tl"
# Joins a sub-agent's id to its parent's thread_ts. A Slack ts never contains it, so a key with
# it names a sub-agent session, which has no Slack thread of its own (nothing is posted for it).
SUBAGENT_SEPARATOR = "-"


class SessionKey(BaseModel):
    """A Slack thread: the workspace, the channel and the ts of the thread's first message."""

    model_config = ConfigDict(frozen=True)

    team: str
    channel: str
    thread_ts: str

    @field_validator("team", "channel", "thread_ts")
    @classmethod
    def _no_separators(cls, value: str) -> str:
        if not value or any(ch in value for ch in ":{} "):
            raise ValueError(f"not a Slack id: {value!r}")
        return value

    def __str__(self) -> str:
        return f"{self.team}:{self.channel}:{self.thread_ts}"

    @classmethod
    def parse(cls, text: str) -> SessionKey:
        team, channel, thread_ts = text.split(":")
        return cls(team=team, channel=channel, thread_ts=thread_ts)

    def redis_key(self, part: str) -> str:
        return f"{PREFIX}:{{{self}}}:{part}"

    @property
    def is_subagent(self) -> bool:
        return SUBAGENT_SEPARATOR in self.thread_ts

    def subagent(self, agent_id: str) -> SessionKey:
        """The session of this session's sub-agent `agent_id`."""
        thread_ts = f"{self.thread_ts}{SUBAGENT_SEPARATOR}{agent_id}"
        return SessionKey(team=self.team, channel=self.channel, thread_ts=thread_ts)


def dedupe_key(*parts: str) -> str:
    return f"{PREFIX}:dedupe:" + ":".join(parts)
