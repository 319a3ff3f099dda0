"""What an MCP server entry says: where the server is, who may use its tools, and which ones ask.

A deployment names its servers in MCP_SERVERS (jobs.settings); each entry is one of these. A
remote server has a `url` (streamable HTTP, or `"transport": "sse"` for a server that speaks only
that); a local one has a `command`, run as a stdio server inside the shell sandbox of the session
(`read_only`: host paths it needs to read, such as where it is installed). Header values that
start with `$` name an environment variable, resolved by the caller, so secrets stay out of the
JSON. `approval` is "always" (the default: every tool asks a person first), "never", or the
names of the tools that ask. `tools`, when given, is the allow-list of the server's tools.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SERVER_NAME = re.compile(r"^[A-Za-z0-9-]{1,32}$")  # no "_": the tool names' separator is "__"
ENV_REFERENCE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")


class McpServer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str | None = Field(default=None, pattern=r"^https?://")
    transport: Literal["http", "sse"] = "http"
    headers: dict[str, str] = Field(default_factory=dict)
    command: list[str] | None = Field(default=None, min_length=1)
    read_only: list[str] = Field(default_factory=list)
    channels: list[str] | None = None  # None: every channel
    approval: Literal["always", "never"] | list[str] = "always"
    tools: list[str] | None = None  # None: every tool the server lists
    # The url's own host and port may be a non-public address (an internal server) for this entry.
    internal: bool = False
    timeout_seconds: float = Field(default=120, gt=0)

    @model_validator(mode="after")
    def _one_place(self) -> McpServer:
        if (self.url is None) == (self.command is None):
            raise ValueError('give either "url" (a remote server) or "command" (a stdio server)')
        if self.command is not None and (self.headers or self.internal or self.transport != "http"):
            raise ValueError('"headers", "internal" and "transport" are for a server with a "url"')
        if any(not path.startswith("/") for path in self.read_only):
            raise ValueError('"read_only" holds absolute paths')
        return self

    def environment_names(self) -> list[str]:
        """The environment variables its header values name."""
        return [match.group(1) for value in self.headers.values() if (match := ENV_REFERENCE.match(value))]

    def asks(self, tool: str) -> bool:
        """Whether a call of the server's `tool` waits for a person's approval."""
        if isinstance(self.approval, list):
            return tool in self.approval
        return self.approval == "always"

    def offers(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools

    def serves(self, channel: str | None) -> bool:
        return self.channels is None or channel in self.channels


def valid_server_name(name: str) -> bool:
    return SERVER_NAME.match(name) is not None
