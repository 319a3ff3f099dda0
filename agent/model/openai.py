"""An OpenAI-compatible chat-completions client on httpx (Kimi first, any compatible endpoint)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import httpx

from agent.model._openai_format import from_openai_message, to_openai_messages
from agent.model._sse import StreamAssembler
from agent.model._usage import usage_from
from agent.model.base import ModelRequest, ModelResponse, StreamListener
from agent.model.connections import ConnectionPool
from agent.model.errors import (
    ContextOverflowError,
    MalformedResponseError,
    ModelHTTPError,
    QuotaExhaustedError,
    RetryableModelError,
    RetryCause,
    StructureRejectedError,
)
from agent.redaction import error_codes, http_error_summary, redact_text

REQUEST_TIMEOUT = httpx.Timeout(connect=10.0, read=300.0, write=30.0, pool=10.0)
# Loading the CA bundle costs ~40 ms; do it once per process (before RQ forks), not per request.
_SSL_CONTEXT = httpx.create_ssl_context()
# How providers say a prompt is over the context window: OpenAI, DeepSeek, vLLM, OpenRouter and
# Groq ("maximum context length", `context_length_exceeded`), Kimi ("token limit", "Input token
# length too long"), Ollama ("longer than the context length"), Anthropic ("prompt is too long").
_OVERFLOW_MARKERS = (
    "context_length",
    "context length",
    "maximum context",
    "too many tokens",
    "token limit",
    "token length",
    "prompt is too long",
)
# Codes of a used-up quota or credit, which a 429 may carry too (OpenAI, Kimi); 402 says it alone.
_QUOTA_CODES = frozenset({"insufficient_quota", "exceeded_current_quota_error"})
DRAIN_AFTER_DONE_S = 0.2  # the body ends right after [DONE]; a longer wait would delay the answer
_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens")
_STRUCTURE_MARKERS = ("tool_call", "tool call", "tool_calls", "tool message", "role", "messages")


class OpenAICompatibleModel:
    """Speaks chat completions. `pool` decides which connections a call uses (connections.py);
    `extra_body` is merged over every request body (provider-specific fields, LLM_EXTRA_BODY);
    `http2` offers HTTP/2 in the TLS handshake (ALPN), kept only where the provider accepts it;
    `vision=False` sends images in the history as a note (the model would refuse the request);
    `prompt_cache_key` sends a request's `cache_key` as such (only OpenAI documents the field:
    `takes_prompt_cache_key`; a stricter provider could refuse a field it does not know)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: httpx.Timeout = REQUEST_TIMEOUT,
        stream: bool = True,
        pool: ConnectionPool | None = None,
        extra_body: dict[str, Any] | None = None,
        http2: bool = False,
        vision: bool = True,
        prompt_cache_key: bool = False,
    ) -> None:
        self.name = model
        self._base_url = base_url.rstrip("/") + "/"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._transport = transport
        self._timeout = timeout
        self._stream = stream
        self._pool = pool or ConnectionPool()
        self._extra_body = extra_body or {}
        self._http2 = http2
        self._vision = vision
        self._prompt_cache_key = prompt_cache_key
        self._endpoint = (self._base_url, api_key, repr(timeout), id(transport), http2)

    async def complete(self, request: ModelRequest, listener: StreamListener | None = None) -> ModelResponse:
        async with self._pool.client(self._endpoint, self._client) as client:
            try:
                if self._stream:
                    return await self._streamed(client, request, listener)
                response = await client.post("chat/completions", json=self.payload(request))
            except (httpx.TimeoutException, httpx.TransportError) as error:
                reason = f"model endpoint unreachable or cut off: {_described(error)}"
                raise RetryableModelError(reason, cause=_transport_cause(error)) from error
        raise_for_status(response)
        return _parse_completion(response)

    async def _streamed(
        self, client: httpx.AsyncClient, request: ModelRequest, listener: StreamListener | None
    ) -> ModelResponse:
        async with client.stream("POST", "chat/completions", json=self.payload(request)) as response:
            if response.status_code >= 400:
                await response.aread()
                raise_for_status(response)
            if "event-stream" not in response.headers.get("content-type", ""):
                await response.aread()  # some endpoints ignore `stream`; anything else is malformed
                return _parse_completion(response)
            assembler = StreamAssembler(listener)
            lines = response.aiter_lines()
            async for line in lines:
                assembler.feed_line(line)
                if assembler.done:
                    await _drained(lines)
                    break
        return assembler.finish()

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.name,
            "messages": to_openai_messages(request.messages, request.system, vision=self._vision),
        }
        if self._stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}  # else streams carry no usage
        if request.tools:
            body["tools"] = request.tools
        if request.max_output_tokens:
            body[self._output_limit_field()] = request.max_output_tokens
        if self._prompt_cache_key and request.cache_key:
            body["prompt_cache_key"] = request.cache_key
        return merged(body, self._extra_body)

    def _output_limit_field(self) -> str:
        """`max_tokens`, unless the extra body uses OpenAI's newer name: never both in one body."""
        return "max_completion_tokens" if "max_completion_tokens" in self._extra_body else "max_tokens"

    def _client(self, limits: httpx.Limits) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self._base_url,
            headers=self._headers,
            timeout=self._timeout,
            transport=self._transport,
            verify=_SSL_CONTEXT,
            limits=limits,
            http2=self._http2,
        )


def takes_prompt_cache_key(base_url: str) -> bool:
    """Whether the endpoint documents `prompt_cache_key`: OpenAI's own API (Kimi, DeepSeek, Groq
    and vLLM cache by prefix with no key; OpenRouter and Anthropic document none)."""
    return urlsplit(base_url).hostname == "api.openai.com"


def merged(body: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`extra` over `body`; objects in both are merged key by key, anything else is replaced.
    A per-request output limit stays the stricter of the two (a compaction summary's cap)."""
    result = dict(body)
    for key, value in extra.items():
        mine = result.get(key)
        if isinstance(mine, dict) and isinstance(value, dict):
            result[key] = merged(mine, value)
        elif key in _LIMIT_FIELDS and isinstance(mine, int) and isinstance(value, int):
            result[key] = min(mine, value)
        else:
            result[key] = value
    return result


async def _drained(lines: AsyncIterator[str]) -> None:
    """Read what follows `[DONE]` (the body's end), so the connection goes back to the pool; an
    endpoint that keeps sending costs its connection, never the answer."""
    with contextlib.suppress(TimeoutError, httpx.HTTPError):
        async with asyncio.timeout(DRAIN_AFTER_DONE_S):
            async for _ in lines:
                pass


def raise_for_status(response: httpx.Response) -> None:
    """Map an error answer to the class the caller branches on."""
    status = response.status_code
    if status < 400:
        return
    body = response.text
    lowered = body.lower()
    if status == 402 or (status == 429 and _QUOTA_CODES & set(error_codes(body))):
        raise QuotaExhaustedError(
            f"the model provider's quota or credit is used up: {http_error_summary(status, body)}"
        )
    if status == 429 or status >= 500:
        cause: RetryCause = "rate_limited" if status == 429 else "server_error"
        raise RetryableModelError(f"model endpoint answered HTTP {status}", _retry_after(response), cause)
    # The body is read to classify the error, never put into its message (see errors.py).
    summary = f"model endpoint answered {http_error_summary(status, body)}"
    if status == 413 or any(marker in lowered for marker in _OVERFLOW_MARKERS):
        raise ContextOverflowError(summary)
    if status in (400, 422) and any(marker in lowered for marker in _STRUCTURE_MARKERS):
        raise StructureRejectedError(summary)
    raise ModelHTTPError(status, body)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _described(error: httpx.HTTPError) -> str:
    return f"{type(error).__name__}: {redact_text(str(error))[:200]}"


def _shape(response: httpx.Response) -> str:
    """What came back instead of a completion, without its content."""
    kind = redact_text(response.headers.get("content-type", "no content type"))[:80]
    return f"HTTP {response.status_code}, {kind}, {len(response.content)} bytes"


def _parse_completion(response: httpx.Response) -> ModelResponse:
    try:
        data = response.json()
        choice = data["choices"][0]
        message = from_openai_message(choice["message"])
    except (ValueError, KeyError, IndexError, TypeError, RecursionError) as error:
        raise MalformedResponseError(f"not a chat completion ({_shape(response)})") from error
    usage = usage_from(data.get("usage")) or usage_from(choice.get("usage"))
    return ModelResponse(message=message, finish_reason=choice.get("finish_reason"), usage=usage)


def _transport_cause(error: Exception) -> RetryCause:
    """A body the server stopped sending mid-way (a cut stream) apart from a server not reached."""
    return "stream_cut" if isinstance(error, httpx.RemoteProtocolError) else "unreachable"
