"""What a chat model is to the rest of the core: a request in, an assistant message out."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agent.messages import Message, ToolCall


class ModelRequest(BaseModel):
    """A projected history plus what the model needs around it."""

    model_config = ConfigDict(frozen=True)

    messages: list[Message]
    system: str | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)  # OpenAI "function" tool declarations
    max_output_tokens: int | None = None
    # The same for every request of one conversation: a provider that routes by it (OpenAI's
    # `prompt_cache_key`) serves the shared prefix from its cache more often.
    cache_key: str | None = None


class Usage(BaseModel):
    """Tokens of one model call. `cached_tokens` is the part of `input_tokens` the provider served
    from its prompt cache; `estimated` says the provider sent no usage and these are our estimate."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    estimated: bool = False


class ModelResponse(BaseModel):
    message: Message  # role assistant; tool calls carry the raw argument strings
    finish_reason: str | None = None
    usage: Usage | None = None


class StreamListener(Protocol):
    """Told about a streamed answer as it arrives: text deltas, and each tool call once complete."""

    def on_text(self, delta: str) -> None: ...

    def on_tool_call(self, call: ToolCall) -> None: ...

    def on_restart(self) -> None:
        """A retry begins: everything heard so far from the failed attempt is void."""


class ChatModel(Protocol):
    name: str

    async def complete(
        self, request: ModelRequest, listener: StreamListener | None = None
    ) -> ModelResponse: ...
