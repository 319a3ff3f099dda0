"""Local listeners for the containment tests.

`ConnectionCounter` stands where nothing may connect (a test asserts it counted zero);
`RecordingServer` answers HTTP from routes the test sets and records each request's Host.
Both bind loopback only.
"""

from __future__ import annotations

import socketserver
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Counting(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: Any = self.server
        with server.lock:
            server.connections += 1  # counted before the close the client would notice


class ConnectionCounter:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server: Any = socketserver.ThreadingTCPServer((host, port), _Counting)
        self._server.daemon_threads = True
        self._server.connections = 0
        self._server.lock = threading.Lock()
        self.host = host
        self.port: int = self._server.server_address[1]

    @property
    def connections(self) -> int:
        with self._server.lock:
            return int(self._server.connections)

    def __enter__(self) -> ConnectionCounter:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


Route = tuple[int, dict[str, str], bytes]


class _Routed(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        server: Any = self.server
        server.requests.append((self.path, self.headers.get("Host")))
        status, headers, body = server.routes.get(self.path, (404, {}, b"no such page"))
        self.send_response(status)
        for name, value in {"Content-Type": "text/plain", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class RecordingServer:
    """HTTP (or, given a server TLS context, HTTPS) on a loopback address; `requests` holds
    (path, Host header) per request, `server_names` the TLS SNI of each handshake."""

    def __init__(self, routes: dict[str, Route], host: str = "127.0.0.1", tls: ssl.SSLContext | None = None):
        self._server: Any = ThreadingHTTPServer((host, 0), _Routed)
        self._server.daemon_threads = True
        self._server.routes = routes
        self._server.requests = []
        self.server_names: list[str | None] = []
        if tls is not None:
            tls.sni_callback = lambda _socket, name, _context: self.server_names.append(name)
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port: int = self._server.server_address[1]
        self.url = f"{'https' if tls else 'http'}://{host}:{self.port}"

    @property
    def requests(self) -> list[tuple[str, str | None]]:
        return list(self._server.requests)

    def __enter__(self) -> RecordingServer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
