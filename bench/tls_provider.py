"""A streaming chat-completions provider over TLS that offers HTTP/2 and HTTP/1.1 (ALPN), for
bench.model_pool: hypercorn serving a small ASGI app in its own process, with a self-signed
certificate made by `openssl` for 127.0.0.1.

Every answer is the same short stream (a role, a text piece, usage, `[DONE]`). The first request
on each new connection is held CONNECT_DELAY_S (from the environment variable of that name),
standing in for the handshakes to a distant provider, which a client pays once per connection.
`GET /stats`
tells how many TCP connections the provider saw (by the client's address) and the HTTP versions
its requests used, so the benchmark can check what was negotiated. Under `/slow/` (a base URL
ending in `/slow/v1`) the answer takes a second, for a client that cancels it.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from gateway.sandbox.stack import free_port

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

START_TIMEOUT_S = 20.0
CONNECT_DELAY_S = float(os.environ.get("CONNECT_DELAY_S", "0"))
SLOW_PIECES = 20
SLOW_EVERY_S = 0.05
_CHUNKS = (
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
    {"choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": "stop"}]},
    {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13}},
)
_STREAM = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in _CHUNKS) + b"data: [DONE]\n\n"

_clients: set[tuple[str, int]] = set()
_versions: Counter[str] = Counter()


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    if scope["path"].endswith("/stats"):
        stats = {"connections": len(_clients), "versions": dict(_versions)}
        await _answer(send, "application/json", json.dumps(stats).encode())
        return
    while (await receive()).get("more_body"):
        pass
    client = tuple(scope["client"])
    if client not in _clients:
        _clients.add(client)
        await asyncio.sleep(CONNECT_DELAY_S)
    _versions[scope["http_version"]] += 1
    if "/slow/" in scope["path"]:
        await _slowly(send)
        return
    await _answer(send, "text/event-stream", _STREAM)


async def _slowly(send: Send) -> None:
    """Under `/slow/`: the same answer with SLOW_PIECES more text pieces, SLOW_EVERY_S apart (a
    long answer a client may cancel half-way)."""
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
    )
    piece = {"choices": [{"index": 0, "delta": {"content": "and "}}]}
    for _ in range(SLOW_PIECES):
        await send(
            {
                "type": "http.response.body",
                "body": f"data: {json.dumps(piece)}\n\n".encode(),
                "more_body": True,
            }
        )
        await asyncio.sleep(SLOW_EVERY_S)
    await send({"type": "http.response.body", "body": _STREAM})


async def _answer(send: Send, content_type: str, body: bytes) -> None:
    headers = [(b"content-type", content_type.encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class TLSProvider:
    """The provider in a hypercorn process of its own (its CPU is not the client's)."""

    def __init__(self, directory: Path, connect_delay_s: float = 0.0, *, http2: bool = True) -> None:
        """`http2=False`: a provider that offers HTTP/1.1 alone."""
        self.connect_delay_s = connect_delay_s
        self.cert, self.key = directory / "cert.pem", directory / "key.pem"
        _self_signed(self.cert, self.key)
        self.port = free_port()
        self.base_url = f"https://127.0.0.1:{self.port}/v1"
        self._config = directory / "hypercorn.toml"
        protocols = '["h2", "http/1.1"]' if http2 else '["http/1.1"]'
        self._config.write_text(
            f'bind = ["127.0.0.1:{self.port}"]\ncertfile = "{self.cert}"\nkeyfile = "{self.key}"\n'
            f'alpn_protocols = {protocols}\nloglevel = "WARNING"\n'
        )
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> TLSProvider:
        command = [sys.executable, "-m", "hypercorn", "--config", str(self._config), "bench.tls_provider:app"]
        env = {**os.environ, "CONNECT_DELAY_S": str(self.connect_delay_s)}
        self._process = subprocess.Popen(command, env=env)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._answers():
            if time.monotonic() > deadline or self._process.poll() is not None:
                raise RuntimeError("hypercorn did not start (is it installed? pip install hypercorn)")
            time.sleep(0.05)
        return self

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert))

    def stats(self) -> dict[str, Any]:
        with httpx.Client(verify=self.ssl_context()) as client:
            return dict(client.get(f"{self.base_url}/stats").json())

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)

    def _answers(self) -> bool:
        try:
            self.stats()
        except httpx.HTTPError:
            return False
        return True


def _self_signed(cert: Path, key: Path) -> None:
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
