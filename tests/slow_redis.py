"""A TCP proxy in front of the test Redis that can make every answer late: a Redis that answers in
500 ms for 10 s, as one behind a saturated network or a failing-over managed service does.

A worker given the proxy's URL reaches Redis only through it; while `slow()` is on, each chunk
Redis sends back is held `delay_s` before it is passed on. The delay is the fault under test,
not a wait of the test's.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

CHUNK = 65536


class SlowRedis:
    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.delay_s = 0.0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = threading.Event()
        threading.Thread(target=self._accept, name="slow redis", daemon=True).start()

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    @contextlib.contextmanager
    def slow(self, delay_s: float) -> Iterator[None]:
        self.delay_s = delay_s
        try:
            yield
        finally:
            self.delay_s = 0.0

    def close(self) -> None:
        self._closed.set()
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, answers: bool) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(CHUNK):
                if answers and self.delay_s:
                    time.sleep(self.delay_s)  # the slow answer is the fault under test
                sink.sendall(chunk)
        for each in (source, sink):
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)
