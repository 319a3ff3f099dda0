"""A redis-server of a test's own, for tests that stop and restart it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from redis import Redis

from gateway.sandbox.ports import free_port
from tests.polling import wait_for


class DurableRedis:
    """A redis-server of the test's own, appending every write to its AOF before answering."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> DurableRedis:
        command = [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.directory),
        ]
        command += ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self._answers, what="redis-server to start")
        return self

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # SIGTERM: Redis finishes the AOF and exits
            self.process.wait(timeout=10)

    def _answers(self) -> bool:
        try:
            return bool(Redis.from_url(self.url, socket_connect_timeout=0.2).ping())
        except Exception:
            return False
