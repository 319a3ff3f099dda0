"""What every local HTTP fake shares: a threading server on a free port, served from a daemon
thread, and a handler that keeps connections alive and logs nothing."""

from __future__ import annotations

import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Slack's and the providers' APIs do

    def setup(self) -> None:
        super().setup()
        # As real servers do (nginx's tcp_nodelay): without it, on a kept-alive connection each
        # small write after the first waits for the client's delayed ACK, 40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _raw(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        """One whole answer: status, length, the given headers, the body."""
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: a client opening more connections at once (a
    # listener looking up ten names in parallel) had SYNs dropped and waited 1 s to resend,
    # which no real API makes anyone do.
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up before its answer was written (a cancelled turn, a timeout) is
        what real clients do, not the fake's error: no traceback in the test's output."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class LocalServer:
    def __init__(self, handler: type[BaseHTTPRequestHandler], name: str, host: str = "127.0.0.1",
                 port: int = 0) -> None:  # fmt: skip
        self.name = name
        self._server = _Server((host, port), handler)
        self._server.daemon_threads = True

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        """http://host:port, the root every fake puts its own paths under."""
        host, port = self.address
        return f"http://{host}:{port}"

    def start(self) -> None:
        threading.Thread(target=self._server.serve_forever, name=self.name, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
