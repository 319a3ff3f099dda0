"""Redis servers of a test's or a benchmark's own: one, or a primary with its replica.

`redis-server` processes on free ports, logging into their own directories: the failover tests
(tests/sentinel_redis.py adds Sentinels) and `bench.gateway --replica` (WAIT for a replica).
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from redis import Redis

from gateway.sandbox.ports import free_port

START_TIMEOUT_S = 30


def _wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {START_TIMEOUT_S} s waiting for {what}")
        time.sleep(0.02)


class RedisServer:
    """One redis-server (or sentinel) process on a free port, logging into `directory`."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory / name
        self.directory.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.arguments: tuple[str, ...] = ()

    def start(self, *arguments: str) -> RedisServer:
        self.arguments = arguments
        log = open(self.directory / "log", "ab")  # noqa: SIM115 - the process keeps writing it
        command = ["redis-server", *arguments, "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--dir", str(self.directory)]
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        _wait_until(self.answers, f"{self.name} to start")
        return self

    def client(self) -> Redis:
        return Redis(port=self.port, socket_connect_timeout=0.2, socket_timeout=2)

    def answers(self) -> bool:
        try:
            return bool(self.client().ping())
        except Exception:
            return False

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


class ReplicatedRedis:
    """A primary with one replica, both append-only as production runs them."""

    def __init__(self, directory: Path) -> None:
        self.primary = RedisServer(directory, "primary")
        self.replica = RedisServer(directory, "replica")

    def start(self) -> ReplicatedRedis:
        durable = ("--appendonly", "yes", "--appendfsync", "everysec", "--save", "")
        # A replica's first sync starts at once, not after Redis's default 5 s wait for others.
        settings = (*durable, "--repl-diskless-sync-delay", "0")
        self.primary.start(*settings)
        self.replica.start(*settings, "--replicaof", "127.0.0.1", str(self.primary.port))
        _wait_until(lambda: replicas_online(self.primary) == 1, "the replica to sync")
        return self

    @property
    def primary_url(self) -> str:
        return f"redis://127.0.0.1:{self.primary.port}/0"

    def pause_replica(self) -> None:
        """The replica stops acknowledging (SIGSTOP) while its connection stays up."""
        assert self.replica.process is not None
        self.replica.process.send_signal(signal.SIGSTOP)

    def resume_replica(self) -> None:
        assert self.replica.process is not None
        self.replica.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        self.resume_replica()
        for server in (self.replica, self.primary):
            server.stop()


def replicas_online(server: RedisServer) -> int:
    info = server.client().info("replication")
    return sum(1 for name, value in info.items() if name.startswith("slave") and value["state"] == "online")
