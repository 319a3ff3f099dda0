"""Retention on real worker processes: the periodic sweep and `threadline purge`.

Sessions are made old by writing their touched time in Redis (the meta hash's `updated` and the
index), never by waiting.
"""

from __future__ import annotations

import re
import subprocess

from agent.testing import FakeLLM, calls, text
from gateway.links import thread_link
from gateway.sandbox.stack import THREADLINE, Stack
from jobs.keys import (
    RETENTION_LOCK,
    SESSION_INDEX,
    SessionKey,
    delivering_key,
    delivery_queued_key,
    lease_key,
)
from jobs.session.store import now_ms
from tests.e2e.turns import Session
from tests.polling import wait_for
from tests.sandboxing import workspace_of

DAY_MS = 24 * 3600 * 1000
ASKING = {"APPROVAL_TOOLS": "", "APPROVAL_WAIVED_TOOLS": ""}  # shell waits for a person


def age(redis, key: SessionKey, days: float) -> None:
    """Make the session look untouched for `days`."""
    then = now_ms() - int(days * DAY_MS)
    redis.hset(f"tl:{{{key}}}:meta", mapping={"updated": then, "created": then})
    redis.zadd(SESSION_INDEX, {str(key): then})


def keys_of(redis, key: SessionKey) -> list[bytes]:
    return list(redis.scan_iter(match=f"tl:{{{key}*", count=1000))


SELF_EXPIRING = re.compile(rb":(usage:turn-|unknown:|swarm:)")  # jobs.keys.fixed_session_keys
WEEK_S = 7 * 24 * 3600


def lasting_keys_of(redis, key: SessionKey) -> list[bytes]:
    """What a sweep must remove: every key of the session but the per-turn and per-call ones,
    which it cannot name without a SCAN and which expire on their own within a week."""
    left = keys_of(redis, key)
    expiring = [name for name in left if SELF_EXPIRING.search(name) and 0 < redis.ttl(name) <= WEEK_S]
    return [name for name in left if name not in expiring]


def settled(session: Session) -> bool:
    """Every notice delivered, no delivery pending and no turn holding the lease (a turn says idle
    before it gives the lease up), so nothing more is written to the session."""
    notices = session.store.notices()
    busy = session.redis.exists(
        delivery_queued_key(session.key), delivering_key(session.key), lease_key(session.key)
    )
    return bool(notices) and session.store.meta.read().delivered == notices[-1][0] and not busy


def finished(redis, fake_slack, fake_llm: FakeLLM, words: str) -> Session:
    """A session whose one turn wrote a file and answered."""
    fake_llm.script(calls(("c1", "write_file", {"path": "notes.txt", "content": words * 200})), text("done"))
    session = Session(redis, fake_slack, words)
    answered = lambda: "done" in session.bot_texts() and session.state() == "idle"  # noqa: E731
    wait_for(answered, timeout=60, what=f"{words} answered")
    wait_for(lambda: settled(session), timeout=30, what=f"{words} delivered")
    return session


def parked(redis, fake_slack, fake_llm: FakeLLM) -> Session:
    fake_llm.script(calls(("c1", "shell", {"command": "echo hi"})))
    session = Session(redis, fake_slack, "asks first")
    wait_for(lambda: session.state() == "awaiting_approval", timeout=60, what="the call to wait for approval")
    wait_for(lambda: settled(session), timeout=30, what="the approval card delivered")
    return session


def purge(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    command = [THREADLINE, "purge", *args]
    return subprocess.run(command, env=stack.env, capture_output=True, text=True, timeout=60)


def test_a_sweep_removes_an_old_finished_session_and_keeps_a_parked_and_a_recent_one(
    make_stack, redis, fake_slack, fake_llm: FakeLLM, tmp_path
):
    stack = make_stack(JANITOR_INTERVAL_SECONDS="0.5", SESSION_RETENTION_DAYS="30", **ASKING)
    old, waiting, recent = (finished(redis, fake_slack, fake_llm, "old"), parked(redis, fake_slack, fake_llm),
                            finished(redis, fake_slack, fake_llm, "recent"))  # fmt: skip
    assert (workspace_of(tmp_path, old.key) / "notes.txt").exists()
    age(redis, old.key, 31)
    age(redis, waiting.key, 31)
    age(redis, recent.key, 29)
    swept_before = stack.log("worker0").count("retention sweep")
    redis.delete(RETENTION_LOCK)  # as if the interval had passed
    swept = lambda: stack.log("worker0").count("retention sweep") > swept_before  # noqa: E731
    wait_for(swept, timeout=30, what="a retention sweep")
    assert lasting_keys_of(redis, old.key) == [] and not workspace_of(tmp_path, old.key).exists()
    assert waiting.state() == "awaiting_approval" and workspace_of(tmp_path, waiting.key).exists()
    assert recent.state() == "idle" and (workspace_of(tmp_path, recent.key) / "notes.txt").exists()
    assert redis.zscore(SESSION_INDEX, str(old.key)) is None


def test_purge_of_a_thread_removes_it_and_says_what_it_removed(
    make_stack, redis, fake_slack, fake_llm: FakeLLM, tmp_path
):
    stack = make_stack(**ASKING)
    session = finished(redis, fake_slack, fake_llm, "forget me")
    count = len(keys_of(redis, session.key))
    done = purge(stack, "--thread", thread_link(fake_slack.url, session.key.channel, session.key.thread_ts))
    assert done.returncode == 0, done.stderr
    said = re.search(r"removed (\S+): (\d+) Redis keys \(([\d,]+) bytes\), workspace ([\d,]+) bytes",
                     done.stdout)  # fmt: skip
    assert said, done.stdout
    assert said[1] == str(session.key) and int(said[2]) == count and int(said[4].replace(",", "")) > 0
    assert keys_of(redis, session.key) == [] and not workspace_of(tmp_path, session.key).exists()


def test_purge_refuses_a_parked_session_unless_forced(
    make_stack, redis, fake_slack, fake_llm: FakeLLM, tmp_path
):
    stack = make_stack(**ASKING)
    waiting = parked(redis, fake_slack, fake_llm)
    link = thread_link(fake_slack.url, waiting.key.channel, waiting.key.thread_ts)
    refused = purge(stack, "--thread", link)
    assert refused.returncode == 1 and "awaiting_approval" in refused.stdout + refused.stderr
    assert waiting.state() == "awaiting_approval"
    forced = purge(stack, "--thread", link, "--force")
    assert forced.returncode == 0 and f"removed {waiting.key}" in forced.stdout
    assert keys_of(redis, waiting.key) == [] and not workspace_of(tmp_path, waiting.key).exists()


def test_purge_older_than_removes_only_the_old_sessions(
    make_stack, redis, fake_slack, fake_llm: FakeLLM, tmp_path
):
    stack = make_stack(**ASKING)
    old, young = finished(redis, fake_slack, fake_llm, "old"), finished(redis, fake_slack, fake_llm, "young")
    age(redis, old.key, 10)
    age(redis, young.key, 5)
    done = purge(stack, "--older-than", "7")
    assert done.returncode == 0, done.stderr
    assert f"removed {old.key}" in done.stdout and str(young.key) not in done.stdout
    assert lasting_keys_of(redis, old.key) == [] and not workspace_of(tmp_path, old.key).exists()
    assert young.state() == "idle" and workspace_of(tmp_path, young.key).exists()
