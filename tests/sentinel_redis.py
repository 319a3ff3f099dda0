"""A primary, its replica and three Sentinels of a test's own, for tests of failover (issue 32)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from redis import Redis

from gateway.sandbox.stack import free_port
from tests.polling import wait_for

SERVICE = "threadline"
# Fast enough for a test: a primary that does not answer for 1 s is down, and a failover that
# stalls is tried again after 3 s. Production keeps Sentinel's defaults (30 s, 3 min).
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 3000


class RedisServer:
    """One redis-server (or sentinel) process on a free port, logging into `directory`."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory / name
        self.directory.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *arguments: str) -> RedisServer:
        log = open(self.directory / "log", "ab")  # noqa: SIM115 - the process keeps writing it
        command = ["redis-server", *arguments, "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--dir", str(self.directory)]
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        wait_for(self.answers, what=f"{self.name} to start")
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


class SentinelRedis:
    """A primary with one replica (append-only, as production runs), watched by three Sentinels
    with a quorum of two. `REDIS_SENTINELS` and `REDIS_SENTINEL_SERVICE` come from `settings`."""

    def __init__(self, directory: Path) -> None:
        self.primary = RedisServer(directory, "primary")
        self.replica = RedisServer(directory, "replica")
        self.sentinels = [RedisServer(directory, f"sentinel{n}") for n in range(3)]

    def start(self) -> SentinelRedis:
        durable = ("--appendonly", "yes", "--appendfsync", "everysec", "--save", "")
        self.primary.start(*durable)
        self.replica.start(*durable, "--replicaof", "127.0.0.1", str(self.primary.port))
        wait_for(lambda: self.replicas_online(self.primary) == 1, what="the replica to sync")
        for sentinel in self.sentinels:
            config = sentinel.directory / "sentinel.conf"
            config.write_text(
                f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary.port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n"
            )
            sentinel.start(str(config), "--sentinel")
        wait_for(self._watched, timeout=30, what="the sentinels to see the replica and each other")
        return self

    @property
    def url(self) -> str:
        """REDIS_URL under Sentinel: its database; its host and port are not used."""
        return "redis://sentinel-names-the-primary:1/0"

    @property
    def settings(self) -> dict[str, str]:
        addresses = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return {"REDIS_SENTINELS": addresses, "REDIS_SENTINEL_SERVICE": SERVICE}

    def master_port(self) -> int | None:
        """The primary's port as the first sentinel that answers names it."""
        for sentinel in self.sentinels:
            try:
                _, port = sentinel.client().sentinel_get_master_addr_by_name(SERVICE)
                return int(port)
            except Exception:
                continue
        return None

    def fail_over(self) -> None:
        """SIGKILL the primary; returns once the sentinels name the replica in its place."""
        self.primary.kill()
        wait_for(lambda: self.master_port() == self.replica.port, timeout=30, what="the replica's promotion")
        wait_for(lambda: self.replica.client().info("replication")["role"] == "master", what="a writable primary")

    def stop(self) -> None:
        for server in [*self.sentinels, self.replica, self.primary]:
            server.stop()

    @staticmethod
    def replicas_online(server: RedisServer) -> int:
        info = server.client().info("replication")
        return sum(1 for name, value in info.items() if name.startswith("slave") and value["state"] == "online")

    def _watched(self) -> bool:
        for sentinel in self.sentinels:
            master = sentinel.client().sentinel_master(SERVICE)
            if int(master["num-slaves"]) < 1 or int(master["num-other-sentinels"]) < 2:
                return False
        return True
