"""The pull request card's CI line follows the forge: a push whose CI has not settled schedules a
look in RQ's scheduled registry; each look edits the card when the status changed, looks again
until it settles, and stops once a newer push took over. Real Redis, the fake GitHub over HTTP,
the job function as the worker's RQ runs it (its settings from the environment)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from jobs import runtime
from jobs.forge.ci_watch import CI_POLLS, CI_WATCH_JOB, watch_ci
from jobs.forge.record import read_record
from jobs.queues import TURNS_QUEUE, queue
from jobs.session.store import SessionStore
from tests.conftest import FORGE_TOKEN
from tests.jobs.forge.test_pull_requests import KEY, cards, port, settings_for


@pytest.fixture
def worker_env(tmp_path, forge, redis_url, monkeypatch) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """The environment a worker reads its settings from, as the job's process would have it."""
    repo = {"url": f"{forge.url}/acme/app.git", "forge": "github", "repo": "acme/app"}
    env = {
        "REDIS_URL": redis_url,
        "CHANNEL_REPOS": json.dumps({"C1": repo}),
        "GITHUB_TOKEN": FORGE_TOKEN,
        "GITHUB_API_URL": forge.api_url,
        "AGENT_WORKDIR": str(tmp_path / "ws"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    runtime.settings.cache_clear()
    runtime.redis_client.cache_clear()
    yield
    runtime.settings.cache_clear()
    runtime.redis_client.cache_clear()


def watches(redis) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    """The CI looks waiting in RQ's scheduled registry: (commit, looks left), in no set order
    (looks due in the same second sort by their random job ids)."""
    turns = queue(redis, TURNS_QUEUE)
    jobs = [turns.fetch_job(job_id) for job_id in turns.scheduled_job_registry.get_job_ids()]
    return [(job.args[1], job.args[2]) for job in jobs if job is not None and job.func_name == CI_WATCH_JOB]


def test_the_card_follows_ci_until_it_settles(tmp_path, forge, redis, worker_env):
    pulls = port(redis, settings_for(tmp_path, forge))
    (pulls.workspace / "README.md").write_text("changed\n")
    pulls.publish("t", "b", None)
    record = read_record(SessionStore(redis, KEY))
    assert record is not None and record.card.ci is None
    head = record.head
    assert watches(redis) == [(head, CI_POLLS)]

    forge.set_status(head, "pending")
    assert watch_ci(str(KEY), head, CI_POLLS) == f"CI of {head[:12]}: pending so far"
    forge.set_status(head, "success")
    assert watch_ci(str(KEY), head, CI_POLLS - 1) == f"CI of {head[:12]}: success"

    assert [c.ci for c in cards(redis)] == [None, "pending", "success"]
    assert sorted(watches(redis)) == [(head, CI_POLLS - 1), (head, CI_POLLS)]  # none after it settled


def test_a_newer_push_ends_the_watch_of_the_older_one(tmp_path, forge, redis, worker_env):
    pulls = port(redis, settings_for(tmp_path, forge))
    (pulls.workspace / "README.md").write_text("changed\n")
    pulls.publish("t", "b", None)
    first = read_record(SessionStore(redis, KEY))
    (pulls.workspace / "README.md").write_text("changed again\n")
    pulls.publish("t", "b", None)
    assert first is not None
    forge.set_status(first.head, "failure")

    assert watch_ci(str(KEY), first.head, CI_POLLS) == "a newer push watches its own CI"
    assert [c.ci for c in cards(redis)] == [None, None]
