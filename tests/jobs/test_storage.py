"""The storage under AGENT_WORKDIR names itself once, and every worker mounting it reads that name."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from jobs.storage import STORAGE_ID_FILE, publish_storage, storage_id, storage_seen_by


def test_workers_racing_on_one_storage_agree_on_its_id_and_another_disk_has_its_own(tmp_path: Path):
    shared = tmp_path / "shared"
    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = set(pool.map(lambda _: storage_id(shared), range(32)))
    assert len(ids) == 1
    assert (shared / STORAGE_ID_FILE).read_text().strip() in ids
    assert [path.name for path in shared.iterdir()] == [STORAGE_ID_FILE]  # no temporary file left
    assert storage_id(tmp_path / "own-disk") not in ids


def test_a_worker_publishes_what_it_sees_for_a_while(tmp_path: Path, redis):
    seen = publish_storage(redis, tmp_path / "ws", ttl_s=30)
    assert storage_seen_by(redis, seen.host, seen.pid) == seen
    assert seen.storage == storage_id(tmp_path / "ws") and seen.path == str((tmp_path / "ws").resolve())
    assert 0 < redis.ttl(f"tl:storage:{seen.host}:{seen.pid}") <= 30
