"""A primary, its replica and three Sentinels of a test's own, for tests of failover (issue 32)."""

from __future__ import annotations

from pathlib import Path

from gateway.sandbox.redis_servers import RedisServer, ReplicatedRedis, replicas_online
from tests.polling import wait_for

SERVICE = "threadline"
# Fast enough for a test: a primary that does not answer for 3 s is down, and a failover that
# stalls is tried again after 6 s. Production keeps Sentinel's defaults (30 s, 3 min). Less than
# 3 s, and a loaded 2-core machine has a sentinel miss a ping from the newly promoted primary
# and fail it over again, back to the old one: a split brain whose writes are lost.
DOWN_AFTER_MS = 3000
FAILOVER_TIMEOUT_MS = 3000


class SentinelRedis(ReplicatedRedis):
    """The primary and its replica, watched by three Sentinels with a quorum of two.
    `settings` are the REDIS_SENTINELS and REDIS_SENTINEL_SERVICE that reach them."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.sentinels = [RedisServer(directory, f"sentinel{n}") for n in range(3)]

    def start(self) -> SentinelRedis:
        super().start()
        # Each sentinel is told the replica and the others (by the ids they are given), which
        # they would otherwise find in a hello every 2 s and an INFO every 10 s.
        ids = [f"{n + 1:040x}" for n in range(len(self.sentinels))]
        for sentinel, own in zip(self.sentinels, ids, strict=True):
            others = [
                f"sentinel known-sentinel {SERVICE} 127.0.0.1 {other.port} {other_id}\n"
                for other, other_id in zip(self.sentinels, ids, strict=True)
                if other_id != own
            ]
            config = sentinel.directory / "sentinel.conf"
            config.write_text(
                f"sentinel myid {own}\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary.port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n"
                f"sentinel known-replica {SERVICE} 127.0.0.1 {self.replica.port}\n" + "".join(others)
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
