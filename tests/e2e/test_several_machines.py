"""Workers on several machines, each stood for by a worker with an AGENT_WORKDIR of its own.

The model (README, "Running on several machines"): AGENT_WORKDIR is storage every worker
mounts. A worker that cannot see a session's files never starts it over in an empty workspace:
the turn stops and the thread says why, and `!resume` on a worker that sees them goes on.
`threadline doctor` says whether the live workers see one storage.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from redis import Redis
from rq import Worker

from agent.testing import FakeLLM, text
from gateway.doctor import run_doctor
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import THREADLINE, Stack
from jobs.keys import SessionKey
from jobs.queues import SERIALIZER, TURNS_QUEUE
from jobs.session.store import SessionStore
from jobs.settings import Settings
from tests.e2e.test_inbound import answered, reply, start_session
from tests.polling import wait_for
from tests.slack_events import message
from tests.thread_view import thread_texts

NOT_SHARED = "this worker cannot see the session's files: AGENT_WORKDIR must be shared storage"


def say(stack: Stack, fake_slack: FakeSlack, root: dict, words: str) -> None:
    said = reply(fake_slack, root, words)
    assert stack.send_event(message(words, ts=said["ts"], thread_ts=root["ts"])).status_code == 200


def asked_with(fake_llm: FakeLLM, words: str) -> bool:
    return any(words in str(request["messages"]) for request in fake_llm.accepted())


def test_a_worker_that_cannot_see_the_sessions_files_stops_the_turn_and_resume_goes_on_elsewhere(
    make_stack, fake_slack, fake_llm, redis, tmp_path
):
    shared, own_disk = tmp_path / "shared", tmp_path / "own-disk"
    first = make_stack(AGENT_WORKDIR=str(shared))
    root = start_session(first, fake_slack, fake_llm)
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    (shared / "T111" / "C111" / root["ts"] / "notes.txt").write_text("made in the first turn")
    first.kill("worker0")
    other = make_stack(AGENT_WORKDIR=str(own_disk))  # the next turn can only land on its worker

    say(first, fake_slack, root, "and the tests?")
    wait_for(lambda: SessionStore(redis, key).meta.read().state == "failed", what="the turn to stop")
    shown = answered(fake_slack, "C111", root["ts"], 2)
    assert NOT_SHARED in shown[-1]
    assert not (own_disk / "T111" / "C111" / root["ts"]).exists()  # no empty workspace made
    assert not asked_with(fake_llm, "and the tests?")

    other.kill("worker0")
    first.spawn("worker1", [THREADLINE, "worker"])  # a worker that mounts the storage
    fake_llm.script(text("tests pass"))
    say(first, fake_slack, root, "!resume")
    wait_for(lambda: "tests pass" in thread_texts(fake_slack, "C111", root["ts"]), what="the answer")
    assert asked_with(fake_llm, "and the tests?")
    assert (shared / "T111" / "C111" / root["ts"] / "notes.txt").read_text() == "made in the first turn"


def test_files_removed_behind_threadlines_back_stop_the_turn_rather_than_start_it_over(
    make_stack, fake_slack, fake_llm, redis, tmp_path
):
    stack = make_stack(AGENT_WORKDIR=str(tmp_path / "shared"))
    root = start_session(stack, fake_slack, fake_llm)
    workspace = tmp_path / "shared" / "T111" / "C111" / root["ts"]
    shutil.rmtree(workspace)

    say(stack, fake_slack, root, "and the tests?")
    shown = answered(fake_slack, "C111", root["ts"], 2)
    assert "the session's files are gone from AGENT_WORKDIR" in shown[-1]
    assert not workspace.exists() and not asked_with(fake_llm, "and the tests?")


def published(redis: Redis, count: int) -> bool:
    """`count` turn workers registered with RQ (where doctor finds them), each having said which
    storage it sees (it may say so before RQ registers it)."""
    workers = Worker.all(connection=redis, serializer=SERIALIZER)
    registered = sum(1 for worker in workers if TURNS_QUEUE in worker.queue_names())
    return registered >= count and len(redis.keys("tl:storage:*")) >= count


def storage_line(redis_url: str, tmp_path: Path) -> str:
    lines: list[str] = []
    run_doctor(Settings.load(REDIS_URL=redis_url, AGENT_WORKDIR=tmp_path / "doctor"), lines.append)
    return next(line for line in lines if line.split()[1] == "storage")


def test_doctor_fails_when_live_workers_see_different_storage(make_stack, redis, redis_url, tmp_path):
    make_stack(AGENT_WORKDIR=str(tmp_path / "one"))
    make_stack(AGENT_WORKDIR=str(tmp_path / "two"))
    wait_for(lambda: published(redis, 2), what="both turn workers to say which storage they see")
    line = storage_line(redis_url, tmp_path)
    assert line.startswith("FAIL storage    turn workers see different storage as AGENT_WORKDIR")
    assert str(tmp_path / "one") in line and str(tmp_path / "two") in line
    assert "fix: mount one shared storage at AGENT_WORKDIR" in line


def test_doctor_is_content_when_every_worker_sees_the_same_storage(make_stack, redis, redis_url, tmp_path):
    for _ in range(2):
        make_stack(AGENT_WORKDIR=str(tmp_path / "shared"))
    wait_for(lambda: published(redis, 2), what="both turn workers to say which storage they see")
    line = storage_line(redis_url, tmp_path)
    assert line.startswith("ok   storage    one storage for every turn worker: storage ")
    assert "(2 at " in line and str((tmp_path / "shared").resolve()) in line
