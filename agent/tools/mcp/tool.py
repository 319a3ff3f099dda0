"""An MCP server's tool as one of the agent's: `<server>__<tool>`, run through the batch adapter.

The server's JSON schema is the tool's (the registry compiles it like any other); its
description is capped, since a server's text reaches every request's prompt. The result's text
parts, images (only when the model reads images) and resource links become the tool's output;
the executor's caps and spill apply to it as to any tool's.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from typing import Any

from mcp import types
from pydantic import BaseModel, ConfigDict

from agent.messages import ContentPart, ImageURLPart, MediaURL, TextPart
from agent.tools.accesses import Access
from agent.tools.base import Tool, ToolContext, ToolResult, error_result
from agent.tools.mcp.connection import CallTimedOut, ListedTool, McpConnection, ServerGone
from agent.tools.mcp.servers import McpServer

DESCRIPTION_MAX_CHARS = 1024
TOOL_NAME_MAX_CHARS = 64  # what OpenAI-compatible providers accept for a function name
SEPARATOR = "__"
_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9_-]")
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


class McpArguments(BaseModel):
    """Whatever the server's schema allows (the registry checks it against that schema)."""

    model_config = ConfigDict(extra="allow")


def tool_name(server: str, tool: str) -> str:
    return f"{server}{SEPARATOR}{_NOT_IN_NAMES.sub('_', tool)}"[:TOOL_NAME_MAX_CHARS]


def capped(description: str) -> str:
    if len(description) <= DESCRIPTION_MAX_CHARS:
        return description
    return description[: DESCRIPTION_MAX_CHARS - 1] + "…"


class McpTool(Tool[McpArguments]):
    parameters = McpArguments

    def __init__(
        self, server: str, entry: McpServer, listed: ListedTool, connection: McpConnection, *, vision: bool
    ) -> None:
        self.name = tool_name(server, listed.name)
        self.description = capped(f"[MCP server {server}] {listed.description}".strip())
        self.requires_approval = entry.asks(listed.name)
        self.server = server
        self.remote_name = listed.name
        self.schema = listed.schema
        self._listed = listed
        self._entry = entry
        self._connection = connection
        self._vision = vision

    def bound_to(self, connection: McpConnection) -> McpTool:
        """The same tool, called through another connection (a turn's own run of a stdio server)."""
        return McpTool(self.server, self._entry, self._listed, connection, vision=self._vision)

    def accesses(self, args: McpArguments, context: ToolContext) -> Sequence[Access] | None:
        """A remote server's tool touches no workspace file; a local one runs in the workspace."""
        return () if self._entry.url is not None else None

    async def run(self, args: McpArguments, context: ToolContext) -> ToolResult:
        arguments = args.model_dump()
        try:
            answer = await self._connection.call(self.remote_name, arguments, self._entry.timeout_seconds)
        except ServerGone:
            return error_result(
                f'The MCP server "{self.server}" stopped answering during the call of {self.name}. '
                "Its outcome is unknown: do not assume it ran or did not run.",
                note="unknown outcome",
            )
        except CallTimedOut:
            return error_result(
                f"{self.name} did not answer within {self._entry.timeout_seconds:g} seconds and was told to "
                "stop. Its outcome is unknown: do not assume it ran or did not run."
            )
        except Exception as error:  # the server unreachable, or refusing the call
            return error_result(f'The MCP server "{self.server}" failed the call: {failure_text(error)}.')
        return self._result(answer)

    def _result(self, answer: types.CallToolResult) -> ToolResult:
        parts = [self._part(block) for block in answer.content]
        if not parts and answer.structuredContent is not None:
            parts = [TextPart(text=json.dumps(answer.structuredContent, ensure_ascii=False))]
        output: str | list[ContentPart]
        if all(isinstance(part, TextPart) for part in parts):
            output = "\n".join(part.text for part in parts if isinstance(part, TextPart))
        else:
            output = parts
        return ToolResult(output=output, is_error=answer.isError)

    def _part(self, block: types.ContentBlock) -> ContentPart:
        if isinstance(block, types.TextContent):
            return TextPart(text=block.text)
        if isinstance(block, types.ImageContent):
            return self._image(block)
        if isinstance(block, types.ResourceLink):
            return TextPart(text=f"[resource link: {block.name} <{block.uri}>]")
        if isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                return TextPart(text=f"[resource {resource.uri}]\n{resource.text}")
            return TextPart(text=f"[resource {resource.uri}: {resource.mimeType or 'binary'}, not shown]")
        if isinstance(block, types.AudioContent):
            return TextPart(text=f"[audio, {block.mimeType}: not shown]")
        return TextPart(text=f"[{type(block).__name__}: not shown]")

    def _image(self, block: types.ImageContent) -> ContentPart:
        size = _decoded_size(block.data)
        if not self._vision or block.mimeType not in IMAGE_TYPES or size is None:
            why = "the model here does not read images" if not self._vision else "not an image it can read"
            return TextPart(text=f"[image, {block.mimeType}, {size or 0} bytes: not shown, {why}]")
        return ImageURLPart(image_url=MediaURL(url=f"data:{block.mimeType};base64,{block.data}"))


def failure_text(error: BaseException) -> str:
    """What went wrong, from the innermost error of an SDK task group's exception group."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return str(error) or type(error).__name__


def _decoded_size(data: str) -> int | None:
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return None


def mcp_tools(
    server: str, entry: McpServer, listed: list[ListedTool], connection: McpConnection, *, vision: bool
) -> list[McpTool]:
    """The agent's tools for what the server listed: the entry's allow-list, one tool per name."""
    tools: dict[str, McpTool] = {}
    for item in listed:
        if entry.offers(item.name):
            tool = McpTool(server, entry, item, connection, vision=vision)
            tools.setdefault(tool.name, tool)
    return list(tools.values())


def any_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema the model sees: the server's, as an object schema."""
    return schema if schema.get("type") == "object" else {"type": "object", **schema}
