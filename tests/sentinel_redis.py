"""A primary, its replica and three Sentinels of a test's own, for tests of failover (issue 32)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from redis import Redis

from gateway.sandbox.stack import free_port
from tests.polling import wait_for

SERVICE = "threadline"
# Fast enough for a test: a primary that does not answer for 3 s is down, and a failover that
# stalls is tried again after 6 s. Production keeps Sentinel's defaults (30 s, 3 min). Less than
# 3 s, and a loaded 2-core machine has a sentinel miss a ping from the newly promoted primary
# and fail it over again, back to the old one: a split brain whose writes are lost.
DOWN_AFTER_MS = 3000
FAILOVER_TIMEOUT_MS = 3000


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


class ReplicatedRedis:
    """A primary with one replica, both append-only as production runs them."""

    def __init__(self, directory: Path) -> None:
        self.primary = RedisServer(directory, "primary")
        self.replica = RedisServer(directory, "replica")

    def start(self) -> ReplicatedRedis:
        durable = ("--appendonly", "yes", "--appendfsync", "everysec", "--save", "")
        self.primary.start(*durable)
        self.replica.start(*durable, "--replicaof", "127.0.0.1", str(self.primary.port))
        wait_for(lambda: replicas_online(self.primary) == 1, what="the replica to sync")
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


class SentinelRedis(ReplicatedRedis):
    """The primary and its replica, watched by three Sentinels with a quorum of two.
    `settings` are the REDIS_SENTINELS and REDIS_SENTINEL_SERVICE that reach them."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.sentinels = [RedisServer(directory, f"sentinel{n}") for n in range(3)]

    def start(self) -> SentinelRedis:
        super().start()
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

    def masters_named(self) -> set[int | None]:
        """The primary's port as each sentinel names it (None: it does not answer)."""
        named: set[int | None] = set()
        for sentinel in self.sentinels:
            try:
                _, port = sentinel.client().sentinel_get_master_addr_by_name(SERVICE)
                named.add(int(port))
            except Exception:
                named.add(None)
        return named

    def fail_over(self) -> None:
        """SIGKILL the primary; returns once every sentinel names the replica in its place and
        the replica takes writes."""
        self.primary.kill()
        promoted = lambda: self.masters_named() == {self.replica.port}  # noqa: E731
        wait_for(promoted, timeout=60, what="the replica's promotion")
        writable = lambda: self.replica.client().info("replication")["role"] == "master"  # noqa: E731
        wait_for(writable, what="a writable primary")

    def bring_back_old_primary(self) -> None:
        """The killed primary starts again as the new primary's replica (as Sentinel would make
        it), so inputs can be acknowledged again; returns once it is in sync."""
        old, new = self.primary, self.replica
        old.start(*old.arguments, "--replicaof", "127.0.0.1", str(new.port))
        wait_for(lambda: replicas_online(new) == 1, timeout=30, what="the old primary to sync as a replica")

    def stop(self) -> None:
        for sentinel in self.sentinels:
            sentinel.stop()
        super().stop()

    def _watched(self) -> bool:
        for sentinel in self.sentinels:
            master = sentinel.client().sentinel_master(SERVICE)
            if int(master["num-slaves"]) < 1 or int(master["num-other-sentinels"]) < 2:
                return False
        return True
