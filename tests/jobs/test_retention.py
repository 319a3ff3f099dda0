"""The retention sweep on a real Redis: which sessions it removes, and that it removes all of them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.messages import user_message
from agent.wire import AppendMessage
from jobs import retention
from jobs.keys import RETENTION_LOCK, SessionKey
from jobs.session.meta import State
from jobs.session.store import SessionStore, now_ms
from jobs.settings import Settings
from jobs.turn.workspace import workspace_path

DAY_MS = 24 * 3600 * 1000
LIVE: tuple[State, ...] = ("running", "queued", "awaiting_approval", "awaiting_agents")
FINISHED: tuple[State, ...] = ("idle", "cancelled", "interrupted", "failed")
_ts = iter(range(100_000, 999_999))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(AGENT_WORKDIR=tmp_path / "workspaces", SESSION_RETENTION_DAYS=30)


def session(redis, state: State, age_days: float, key: SessionKey | None = None) -> SessionKey:
    """A session with a wire record, its state last changed `age_days` ago."""
    key = key or SessionKey(team="T1", channel="C1", thread_ts=f"1700000000.{next(_ts)}")
    store = SessionStore(redis, key)
    store.touch()
    store.append(AppendMessage(message=user_message("hello")), once_key="hello")
    store.meta.set_state(state, now_ms() - int(age_days * DAY_MS))
    return key


def exists(redis, key: SessionKey) -> bool:
    return SessionStore(redis, key).meta.exists()


def keys_of(redis, key: SessionKey) -> list[bytes]:
    """Every key of the session and of the sub-agents under it (they share the tag's prefix)."""
    return list(redis.scan_iter(match=f"tl:{{{key}*", count=1000))


def sweep(redis, settings: Settings, **kwargs) -> list[retention.Removed]:
    redis.delete(RETENTION_LOCK)  # as if the interval had passed
    return retention.sweep(redis, settings, **kwargs)


def test_only_finished_sessions_untouched_for_the_retention_are_swept(redis, settings):
    old_finished = [session(redis, state, 31) for state in FINISHED]
    old_live = [session(redis, state, 31) for state in LIVE]
    recent = session(redis, "idle", 29)
    removed = sweep(redis, settings)
    assert sorted(str(r.session) for r in removed) == sorted(map(str, old_finished))
    assert not any(exists(redis, key) for key in old_finished)
    assert all(exists(redis, key) for key in [*old_live, recent])


def test_a_session_holding_a_lease_is_kept(redis, settings):
    key = session(redis, "idle", 40)
    SessionStore(redis, key).redis.set(SessionStore(redis, key).lease_key, "turn:x", px=20_000)
    assert sweep(redis, settings) == []
    assert exists(redis, key)


def test_input_written_since_the_index_saw_it_keeps_the_session(redis, settings):
    key = session(redis, "idle", 40)
    redis.hset(SessionStore(redis, key).meta.key, "updated", str(now_ms()))  # as jobs/input.lua does
    assert sweep(redis, settings) == []
    assert exists(redis, key)


def test_a_sub_agents_touch_keeps_its_root(redis, settings):
    root = session(redis, "idle", 40)
    session(redis, "idle", 1, key=root.subagent("a1"))
    assert sweep(redis, settings) == []
    assert exists(redis, root)


def test_a_root_with_a_live_sub_agent_is_kept(redis, settings):
    root = session(redis, "idle", 40)
    child = session(redis, "running", 40, key=root.subagent("a1"))
    assert sweep(redis, settings) == []
    assert exists(redis, root) and exists(redis, child)


def test_sweeping_a_root_removes_its_sub_agents_and_its_workspace(redis, settings, tmp_path):
    root = session(redis, "idle", 40)
    child = session(redis, "idle", 40, key=root.subagent("a1"))
    session(redis, "idle", 40, key=child.subagent("a2"))
    SessionStore(redis, root).redis.set(f"tl:{{{root}}}:unknown:c1", "1")  # a key of a variable name
    outside = tmp_path / "outside.txt"
    outside.write_text("not the session's")
    workspace = workspace_path(settings, root)
    (workspace / "locked").mkdir(parents=True)
    (workspace / "locked" / "notes.txt").write_text("x" * 10_000)
    (workspace / "out").symlink_to(outside)
    os.chmod(workspace / "locked", 0o500)
    [removed] = sweep(redis, settings)
    assert removed.session == root and removed.workspace_bytes >= 10_000 and removed.keys >= 9
    assert keys_of(redis, root) == [f"tl:{{{root}}}:unknown:c1".encode()]  # expires on its own (7 d)
    assert not workspace.exists() and outside.read_text() == "not the session's"


def test_a_sweep_is_bounded_and_live_sessions_do_not_hold_it_up(redis, settings):
    parked = session(redis, "awaiting_approval", 50)
    finished = [session(redis, "idle", 40 - index) for index in range(3)]
    assert sweep(redis, settings, batch=2) and exists(redis, parked)
    assert sum(exists(redis, key) for key in finished) == 2
    sweep(redis, settings, batch=2)
    assert not any(exists(redis, key) for key in finished) and exists(redis, parked)


def test_one_worker_sweeps_per_interval(redis, settings):
    session(redis, "idle", 40)
    other = session(redis, "idle", 40)
    retention.sweep(redis, settings, batch=1)
    assert retention.sweep(redis, settings, batch=1) == []  # the lock is held for the interval
    assert exists(redis, other)


def test_a_session_the_index_never_saw_is_found(redis, settings):
    key = SessionKey(team="T1", channel="C1", thread_ts="1600000000.000100")
    old = str(now_ms() - 40 * DAY_MS)
    redis.hset(SessionStore(redis, key).meta.key, mapping={"state": "idle", "updated": old, "created": old})
    SessionStore(redis, key).append(AppendMessage(message=user_message("from before")), once_key="x")
    [removed] = sweep(redis, settings)
    assert removed.session == key and keys_of(redis, key) == []
