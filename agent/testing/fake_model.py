"""A fake OpenAI-compatible chat-completions server that refuses what real providers refuse.

It validates every request the way OpenAI and Kimi do (a tool call without its result, a
result without its call, empty messages, a request over the context window → HTTP 400 with
the provider's error shape) and answers from a script, so a test decides each model step.
Streaming (`stream: true`) is answered as server-sent events with tool-call deltas, on a
kept-alive connection (chunked), with usage in a last chunk only when the request asks for it
(`stream_options.include_usage`), as OpenAI does. `thinking=True` behaves like DeepSeek's
thinking mode: every answer carries `reasoning_content`, and an assistant message with tool
calls sent back without it is refused. `connect_delay_s` holds each new TCP connection that
long before it is served (a TLS handshake to a distant provider, for bench.model_pool).
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from typing import Any

from agent.testing._local_http import LocalServer, QuietHandler

CHARS_PER_TOKEN = 4  # deliberately not the product's estimator: a bug there must not hide here
# Providers bill an image by its pixels, not its base64 size: ~765 tokens for a 1024² image on
# OpenAI's high detail. Counting the data URL as text would put one screenshot over the window.
IMAGE_TOKENS = 1_000
NO_VISION = "Invalid content type. image_url is only supported by certain models."  # OpenAI's words


@dataclass
class Reply:
    """One scripted answer. `tool_calls` items are (id, name, arguments-string)."""

    text: str | None = None
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)
    status: int = 200
    error: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    finish_reason: str | None = None
    raw_body: bytes | None = None  # sent as-is (malformed answers)
    cut_stream_after: int | None = None  # stream: close the connection after this many events
    gate: threading.Event | None = None  # hold the answer until the test sets it
    reasoning: str | None = None  # sent as `reasoning_content` (always, empty, on a thinking fake)
    usage: bool = True  # False: the answer reports no usage, as some local servers do
    text_every_s: float = 0.0  # stream: pause before each text piece after the first (a slow writer)
    rest_gate: threading.Event | None = None  # stream: hold the text after its first piece until set


def text(value: str) -> Reply:
    return Reply(text=value)


def calls(*items: tuple[str, str, dict[str, Any] | str]) -> Reply:
    return Reply(tool_calls=[(i, n, a if isinstance(a, str) else json.dumps(a)) for i, n, a in items])


class ValidationFailure(Exception):
    def __init__(self, message: str, code: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.code = code


class FakeLLM:
    def __init__(
        self,
        context_window: int = 64_000,
        default: Callable[[dict[str, Any]], Reply] | None = None,
        *,
        thinking: bool = False,
        connect_delay_s: float = 0.0,
        cached_tokens: int = 0,
        vision: bool = False,
    ) -> None:
        self.context_window = context_window
        self.thinking = thinking
        self.connect_delay_s = connect_delay_s
        self.cached_tokens = cached_tokens  # reported as OpenAI's prompt_tokens_details.cached_tokens
        self.connections = 0  # TCP connections accepted so far: how well a client reuses them
        self.vision = vision  # off, as most models are: an image part is refused with HTTP 400
        self.default: Callable[[dict[str, Any]], Reply] = default or (lambda body: text("ok"))
        self.requests: list[dict[str, Any]] = []
        self.rejected: list[tuple[dict[str, Any], str]] = []
        self.first_text_at: list[float] = []  # time.time() each streamed answer's first text went out
        self._script: queue.Queue[Reply] = queue.Queue()
        self._lock = threading.Lock()
        self._server = LocalServer(_handler_for(self), "fake-llm")

    def start(self) -> FakeLLM:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    @property
    def base_url(self) -> str:
        return f"{self._server.url}/v1"

    def script(self, *replies: Reply) -> None:
        for reply in replies:
            self._script.put(reply)

    def accepted(self) -> list[dict[str, Any]]:
        with self._lock:
            rejected = {id(body) for body, _ in self.rejected}
            return [body for body in self.requests if id(body) not in rejected]

    def next_reply(self, body: dict[str, Any]) -> Reply:
        try:
            return self._script.get_nowait()
        except queue.Empty:
            return self.default(body)

    def record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)

    def reject(self, body: dict[str, Any], reason: str) -> None:
        with self._lock:
            self.rejected.append((body, reason))

    def connected(self) -> None:
        with self._lock:
            self.connections += 1

    def usage(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        prompt = len(json.dumps(body.get("messages"))) // CHARS_PER_TOKEN
        answer = (reply.text or "") + (reply.reasoning or "") + "".join(a for _, _, a in reply.tool_calls)
        completion = max(1, len(answer) // CHARS_PER_TOKEN)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": min(self.cached_tokens, prompt)},
        }


def validate_thinking(messages: list[dict[str, Any]]) -> None:
    """DeepSeek's thinking mode: an assistant message with tool calls must bring its reasoning back."""
    for index, message in enumerate(messages):
        calls = message.get("role") == "assistant" and message.get("tool_calls")
        if calls and not isinstance(message.get("reasoning_content"), str):
            raise ValidationFailure(
                f"Missing `reasoning_content` field in the assistant message at message index {index}. "
                "For more information, please refer to "
                "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
            )


def validate(body: dict[str, Any], context_window: int, vision: bool = False) -> None:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValidationFailure("'messages' must be a non-empty array")
    open_calls: dict[str, str] = {}
    images = 0
    for index, message in enumerate(messages):
        _validate_message(index, message, open_calls)
        images += _images(index, message, vision)
    if open_calls:
        raise _unanswered(open_calls)
    tokens = len(json.dumps(_without_images(messages))) // CHARS_PER_TOKEN + images * IMAGE_TOKENS
    if tokens > context_window:
        raise ValidationFailure(
            f"This model's maximum context length is {context_window} tokens. However, your messages "
            f"resulted in {tokens} tokens. Please reduce the length of the messages.",
            code="context_length_exceeded",
        )


def _validate_message(index: int, message: dict[str, Any], open_calls: dict[str, str]) -> None:
    role = message.get("role")
    if role not in ("system", "user", "assistant", "tool"):
        raise ValidationFailure(f"messages[{index}].role: invalid value {role!r}")
    if role != "tool" and open_calls:
        raise _unanswered(open_calls)
    if role == "tool":
        call_id = message.get("tool_call_id")
        if call_id not in open_calls:
            raise ValidationFailure(
                f"messages[{index}]: messages with role 'tool' must be a response to a preceding "
                f"message with 'tool_calls' (tool_call_id {call_id!r} not found)"
            )
        del open_calls[call_id]
        _require_content(index, message)
        return
    if role == "assistant" and message.get("tool_calls"):
        for call in message["tool_calls"]:
            _validate_call(index, call, open_calls)
        return
    _require_content(index, message)


def _images(index: int, message: dict[str, Any], vision: bool) -> int:
    """How many image parts the message has; a model without vision refuses any."""
    content = message.get("content")
    parts = content if isinstance(content, list) else []
    images = [part for part in parts if isinstance(part, dict) and part.get("type") == "image_url"]
    if images and not vision:
        raise ValidationFailure(f"messages[{index}]: {NO_VISION}")
    for part in images:
        url = (part.get("image_url") or {}).get("url")
        if not isinstance(url, str) or not url.startswith(("data:image/", "https://")):
            raise ValidationFailure(f"messages[{index}]: image_url.url must be a data URL or an https URL")
    return len(images)


def _without_images(messages: list[Any]) -> list[Any]:
    def strip(message: Any) -> Any:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            return message
        kept = [part for part in content if not (isinstance(part, dict) and part.get("type") == "image_url")]
        return {**message, "content": kept}

    return [strip(message) for message in messages]


def _validate_call(index: int, call: dict[str, Any], open_calls: dict[str, str]) -> None:
    call_id = call.get("id")
    function = call.get("function") or {}
    if not call_id or call_id in open_calls:
        raise ValidationFailure(f"messages[{index}].tool_calls: duplicate or missing id {call_id!r}")
    if not isinstance(function.get("arguments"), str) or not function.get("name"):
        raise ValidationFailure(
            f"messages[{index}].tool_calls[{call_id}]: function name and arguments string required"
        )
    open_calls[call_id] = function["name"]


def _require_content(index: int, message: dict[str, Any]) -> None:
    content = message.get("content")
    empty = content is None or (isinstance(content, str) and not content.strip()) or content == []
    if empty:
        raise ValidationFailure(f"messages[{index}] ({message.get('role')}): content must not be empty")


def _unanswered(open_calls: dict[str, str]) -> ValidationFailure:
    return ValidationFailure(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(open_calls)}"
    )


def _completion(reply: Reply, model: str, usage: dict[str, Any] | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in reply.tool_calls
        ]
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        **({"usage": usage} if usage else {}),
    }


def _stream_events(reply: Reply, model: str, usage: dict[str, Any] | None) -> list[dict[str, Any]]:
    base = {"id": f"chatcmpl-{time.monotonic_ns()}", "object": "chat.completion.chunk", "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": ""})]
    if reply.reasoning is not None:
        events.append(chunk({"reasoning_content": ""}))  # DeepSeek opens with an empty delta
        events.extend(chunk({"reasoning_content": piece}) for piece in _pieces(reply.reasoning, 16))
    for piece in _pieces(reply.text or "", 16):
        events.append(chunk({"content": piece}))
    for index, (call_id, name, arguments) in enumerate(reply.tool_calls):
        first = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [first]}))
        for piece in _pieces(arguments, 8):
            events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    events.append(chunk({}, reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")))
    if usage:
        events.append({**base, "choices": [], "usage": usage})
    return events


def _pieces(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)]


def _handler_for(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def setup(self) -> None:
            super().setup()
            fake.connected()
            if fake.connect_delay_s:
                time.sleep(fake.connect_delay_s)

        def do_GET(self) -> None:
            if not self.path.rstrip("/").endswith("/models"):
                return self._json(404, {"error": {"message": "not found", "type": "not_found"}})
            self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._json(404, {"error": {"message": "not found", "type": "not_found"}})
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                return self._json(
                    400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}}
                )
            fake.record(body)
            try:
                validate(body, fake.context_window, fake.vision)
                if fake.thinking:
                    validate_thinking(body["messages"])
            except ValidationFailure as failure:
                fake.reject(body, str(failure))
                return self._json(
                    400,
                    {
                        "error": {
                            "message": str(failure),
                            "type": "invalid_request_error",
                            "code": failure.code,
                        }
                    },
                )
            self._answer(body, fake.next_reply(body))

        def _answer(self, body: dict[str, Any], reply: Reply) -> None:
            if reply.gate is not None:
                reply.gate.wait(timeout=60)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.raw_body is not None:
                return self._raw(reply.status, reply.raw_body, reply.headers)
            if reply.status != 200:
                error = reply.error or {
                    "error": {"message": f"scripted HTTP {reply.status}", "type": "server_error"}
                }
                return self._json(reply.status, error, reply.headers)
            if fake.thinking and reply.reasoning is None:
                reply = replace(reply, reasoning="")
            usage = fake.usage(body, reply) if reply.usage else None
            if body.get("stream"):
                asked = (body.get("stream_options") or {}).get("include_usage") is True
                return self._stream(reply, body.get("model", "fake"), usage if asked else None)
            self._json(200, _completion(reply, body.get("model", "fake"), usage))

        def _stream(self, reply: Reply, model: str, usage: dict[str, Any] | None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")  # the connection stays open after it
            self.end_headers()
            events = _stream_events(reply, model, usage)
            limit = reply.cut_stream_after
            texts = 0
            for count, event in enumerate(events):
                if limit is not None and count >= limit:
                    self.close_connection = True
                    return
                delta = (event.get("choices") or [{}])[0].get("delta") or {}
                has_text = bool(delta.get("content"))
                if has_text and texts == 1 and reply.rest_gate is not None:
                    reply.rest_gate.wait(timeout=60)
                if has_text and texts and reply.text_every_s:
                    time.sleep(reply.text_every_s)
                self._chunk(f"data: {json.dumps(event)}\n\n".encode())
                if has_text and not texts:
                    with fake._lock:
                        fake.first_text_at.append(time.time())
                texts += has_text
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            self._raw(status, json.dumps(payload).encode(), headers or {})

        def _raw(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            super()._raw(status, data, {"Content-Type": "application/json", **headers})

    return Handler
