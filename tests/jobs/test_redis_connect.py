"""Every process's Redis client comes from one factory, which follows a Sentinel failover (issue 32)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.aio_redis import aio_twin
from jobs.redis_connect import RedisTarget, connect
from jobs.settings import Settings, SettingsError
from tests.sentinel_redis import SentinelRedis


@pytest.fixture
def sentinel_redis(tmp_path: Path) -> Iterator[SentinelRedis]:
    servers = SentinelRedis(tmp_path).start()
    yield servers
    servers.stop()


def target_of(servers: SentinelRedis, url: str | None = None) -> RedisTarget:
    return RedisTarget.of(Settings.load(REDIS_URL=url or servers.url, **servers.settings))


def test_sentinel_addresses_are_checked_when_the_settings_load() -> None:
    with pytest.raises(SettingsError, match="REDIS_SENTINELS"):
        Settings.load(REDIS_SENTINELS="s1:26379,s2")
    settings = Settings.load(REDIS_SENTINELS=" s1:26379, [::1]:26380 ,")
    assert settings.sentinels == (("s1", 26379), ("::1", 26380))


def test_sentinels_without_the_name_they_watch_the_primary_under_are_refused() -> None:
    settings = Settings.load(REDIS_URL="redis://h/0", REDIS_SENTINELS="s1:26379")
    with pytest.raises(SettingsError, match="REDIS_SENTINEL_SERVICE"):
        RedisTarget.of(settings)


def test_replicas_to_ack_default_to_one_with_sentinel_and_none_without() -> None:
    assert Settings.load(REDIS_URL="redis://h/0").replicas_to_ack == 0
    with_sentinel = Settings.load(REDIS_SENTINELS="s1:26379", REDIS_SENTINEL_SERVICE="m")
    assert with_sentinel.replicas_to_ack == 1
    assert Settings.load(REDIS_SENTINELS="s1:26379", REDIS_MIN_REPLICAS_ACK="0").replicas_to_ack == 0


def test_the_sentinel_url_gives_the_database_and_credentials_not_the_host() -> None:
    target = RedisTarget("rediss://me:p%40ss@ignored:1/3", (("s", 26379),), "m")
    assert target.server_kwargs() == {"db": 3, "username": "me", "password": "p@ss", "ssl": True}


def test_a_client_reaches_the_primary_sentinel_names_in_the_urls_database(
    sentinel_redis: SentinelRedis,
) -> None:
    client = connect(target_of(sentinel_redis, "redis://ignored:1/4"))
    client.set("tl:test:where", "here")
    primary_db4 = connect(RedisTarget(f"redis://127.0.0.1:{sentinel_redis.primary.port}/4"))
    assert primary_db4.get("tl:test:where") == b"here"


def test_the_same_clients_follow_a_failover_without_a_restart(sentinel_redis: SentinelRedis) -> None:
    client = connect(target_of(sentinel_redis))
    new_primary = sentinel_redis.replica.client()

    async def across_the_failover() -> None:
        twin = aio_twin(client)  # the asyncio client a turn's loop uses
        client.set("tl:test:before", "1")
        await twin.set("tl:test:async-before", "1")
        assert client.wait(1, 2000) == 1

        await asyncio.to_thread(sentinel_redis.fail_over)

        assert client.get("tl:test:before") == b"1"  # it was replicated before the primary died
        client.set("tl:test:after", "2")
        assert new_primary.get("tl:test:after") == b"2"
        assert await twin.get("tl:test:async-before") == b"1"
        await twin.set("tl:test:async-after", "2")
        assert new_primary.get("tl:test:async-after") == b"2"

    asyncio.run(across_the_failover())
