"""A Socket Mode server on the standard library: the WebSocket end Slack keeps for an app.

Enough RFC 6455 for Slack's protocol: the opening handshake, text frames both ways (masked
from the client, unmasked from the server), ping/pong and close. On connect it says `hello`
like Slack; `send` pushes an envelope to the app, and every `{"envelope_id": …}` the app sends
back is recorded with the time it arrived, so a test can check the 3-second acknowledgement.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import socket
import socketserver
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3
TEXT, CLOSE, PING, PONG = 0x1, 0x8, 0x9, 0xA
MAX_FRAME = 1 << 24  # a Socket Mode message is far smaller; anything bigger is a broken peer


@dataclass
class Ack:
    envelope_id: str
    payload: dict[str, Any] | None
    at: float


@dataclass
class SocketState:
    connections: list[_Connection] = field(default_factory=list)
    acks: list[Ack] = field(default_factory=list)
    sent: dict[str, float] = field(default_factory=dict)  # envelope id → when it was sent
    received: list[dict[str, Any]] = field(default_factory=list)  # every other message
    lock: threading.Condition = field(default_factory=threading.Condition)


class FakeSocketMode:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.state = SocketState()
        self._tickets = itertools.count(1)
        self._server = _Server((host, 0), _handler_for(self.state))

    def start(self) -> FakeSocketMode:
        threading.Thread(target=self._server.serve_forever, name="fake-socket-mode", daemon=True).start()
        return self

    def stop(self) -> None:
        for connection in self.open_connections():
            connection.close()
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        host, port = str(self._server.server_address[0]), self._server.server_address[1]
        return f"ws://{host}:{port}/link/?ticket=t{next(self._tickets)}&app_id=A111"

    def open_connections(self) -> list[_Connection]:
        with self.state.lock:
            return [c for c in self.state.connections if c.open]

    def wait_connected(self, timeout: float = 20.0) -> None:
        with self.state.lock:
            if not self.state.lock.wait_for(lambda: any(c.open for c in self.state.connections), timeout):
                raise AssertionError(f"no Socket Mode connection within {timeout}s")

    def send(self, envelope: dict[str, Any]) -> None:
        """Push an envelope to the app over its newest open connection."""
        connections = self.open_connections()
        if not connections:
            raise AssertionError("no app is connected")
        with self.state.lock:
            self.state.sent[envelope["envelope_id"]] = time.monotonic()
        connections[-1].send_text(json.dumps(envelope))

    def ack_for(self, envelope_id: str, timeout: float = 10.0) -> Ack:
        with self.state.lock:
            found = self.state.lock.wait_for(lambda: self._ack(envelope_id), timeout)
        if not found:
            raise AssertionError(f"no ack for envelope {envelope_id} within {timeout}s")
        return found

    def ack_delay(self, envelope_id: str) -> float:
        ack = self.ack_for(envelope_id)
        return ack.at - self.state.sent[envelope_id]

    def _ack(self, envelope_id: str) -> Ack | None:
        return next((a for a in self.state.acks if a.envelope_id == envelope_id), None)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Connection:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.open = True
        self._send_lock = threading.Lock()

    def send_text(self, text: str) -> None:
        self._send(TEXT, text.encode())

    def close(self) -> None:
        if self.open:
            self.open = False
            try:
                self._send(CLOSE, struct.pack("!H", 1000))
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _send(self, opcode: int, data: bytes) -> None:
        size = len(data)
        if size < 126:
            header = struct.pack("!BB", 0x80 | opcode, size)
        elif size < 1 << 16:
            header = struct.pack("!BBH", 0x80 | opcode, 126, size)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 127, size)
        with self._send_lock:
            self.sock.sendall(header + data)


def _handler_for(state: SocketState) -> type[socketserver.StreamRequestHandler]:
    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            key = _read_handshake(self.rfile)
            if key is None:
                self.wfile.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                return
            accept = base64.b64encode(hashlib.sha1((key + WEBSOCKET_GUID).encode()).digest()).decode()
            self.wfile.write(
                (
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    f"Sec-WebSocket-Accept: {accept}\r\n\r\n"
                ).encode()
            )
            connection = _Connection(self.connection)
            with state.lock:
                state.connections.append(connection)
                state.lock.notify_all()
            connection.send_text(json.dumps(_hello(len(state.connections))))
            try:
                self._serve(connection)
            finally:
                connection.open = False

        def _serve(self, connection: _Connection) -> None:
            while connection.open:
                frame = _read_frame(self.rfile)
                if frame is None:
                    return
                opcode, data = frame
                if opcode == PING:
                    connection._send(PONG, data)
                elif opcode == CLOSE:
                    connection.close()
                elif opcode == TEXT:
                    _record(state, json.loads(data))

    return Handler


def _hello(number: int) -> dict[str, Any]:
    return {
        "type": "hello",
        "num_connections": number,
        "debug_info": {"host": "fake-socket-mode", "approximate_connection_time": 18060},
        "connection_info": {"app_id": "A111"},
    }


def _record(state: SocketState, message: dict[str, Any]) -> None:
    with state.lock:
        if "envelope_id" in message:
            state.acks.append(Ack(message["envelope_id"], message.get("payload"), time.monotonic()))
        else:
            state.received.append(message)
        state.lock.notify_all()


def _read_handshake(rfile: Any) -> str | None:
    request_line = rfile.readline(8192)
    if not request_line.startswith(b"GET "):
        return None
    headers: dict[str, str] = {}
    while True:
        line = rfile.readline(8192).decode("latin-1").strip()
        if not line:
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("upgrade", "").lower() != "websocket":
        return None
    return headers.get("sec-websocket-key")


def _read_frame(rfile: Any) -> tuple[int, bytes] | None:
    head = rfile.read(2)
    if len(head) < 2:
        return None
    opcode, masked, size = head[0] & 0x0F, head[1] & 0x80, head[1] & 0x7F
    if size == 126:
        size = struct.unpack("!H", rfile.read(2))[0]
    elif size == 127:
        size = struct.unpack("!Q", rfile.read(8))[0]
    if size > MAX_FRAME:
        return None
    mask = rfile.read(4) if masked else b"\0\0\0\0"
    data = rfile.read(size)
    return opcode, bytes(byte ^ mask[i % 4] for i, byte in enumerate(data))
