"""The web process's outer contract: signatures, url_verification, Redis outages, settings."""

from __future__ import annotations

import http.client
import subprocess
import time
from pathlib import Path

from gateway.sandbox.ports import free_port
from gateway.sandbox.stack import THREADLINE, Stack
from jobs.keys import JANITOR_LOCK, PREFIX, RETENTION_LOCK, RETENTION_SCAN
from tests.polling import wait_for
from tests.rq_state import waiting
from tests.slack_events import mention, sample_event


def test_url_verification_is_answered_with_the_challenge(stack: Stack):
    body = sample_event("url_verification")
    response = stack.send_event(body)
    assert response.status_code == 200
    assert body["challenge"] in response.text


WORKERS_OWN = {JANITOR_LOCK, RETENTION_LOCK, RETENTION_SCAN}  # the worker's sweeps, whenever they run
WORKER_STORAGE = f"{PREFIX}:storage:"  # each turn worker's, once it has started


def _workers_own(key: bytes) -> bool:
    return key.decode() in WORKERS_OWN or key.decode().startswith(WORKER_STORAGE)


def session_state(redis) -> tuple[list[bytes], int]:
    """Everything a request could have written: session keys and queued jobs (not RQ's own
    heartbeats, nor what the worker writes of itself: its sweeps' locks, the storage it sees)."""
    keys = [key for key in redis.keys("tl:*") if not _workers_own(key)]
    return sorted(keys), waiting(redis)


def test_bad_signature_is_refused_and_changes_nothing(stack: Stack, redis):
    before = session_state(redis)
    response = stack.send_event(
        mention("hi", ts="1700000000.000100"), headers={"X-Slack-Signature": "v0=" + "0" * 64}
    )
    assert response.status_code == 401
    assert session_state(redis) == before


def test_stale_timestamp_is_refused_and_changes_nothing(stack: Stack, redis):
    before = session_state(redis)
    response = stack.send_event(mention("hi", ts="1700000000.000200"), timestamp=int(time.time()) - 6 * 60)
    assert response.status_code == 401
    assert session_state(redis) == before


def test_mention_while_redis_is_down_is_a_clear_error_not_a_crash(tmp_path: Path, fake_slack, fake_llm):
    dead_redis = f"redis://127.0.0.1:{free_port()}/0"
    stack = Stack(tmp_path, dead_redis, fake_slack.api_url, fake_llm.base_url).start(workers=0)
    try:
        first = stack.send_event(mention("hello", ts="1700000000.000300"))
        second = stack.send_event(mention("again", ts="1700000000.000400"))
        assert first.status_code == 503 and second.status_code == 503  # not acked: Slack retries
        assert stack.processes["web"].poll() is None
        wait_for(lambda: "Redis is unavailable" in stack.log("web"), what="the logged error")
    finally:
        stack.stop()


def test_readyz_says_whether_web_can_take_slacks_requests_and_healthz_only_that_it_lives(
    tmp_path: Path, stack: Stack, fake_slack, fake_llm
):
    assert stack.client.get("/readyz").status_code == 200
    dead_redis = f"redis://127.0.0.1:{free_port()}/0"
    cut_off = Stack(tmp_path, dead_redis, fake_slack.api_url, fake_llm.base_url).start(workers=0)
    try:
        ready = cut_off.client.get("/readyz")
        assert ready.status_code == 503 and "Redis does not answer" in ready.text
        assert cut_off.client.get("/healthz").status_code == 200  # alive: no restart is needed
    finally:
        cut_off.stop()


def test_missing_settings_stop_the_process_with_one_line_naming_them():
    result = subprocess.run(
        [THREADLINE, "web"], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "SLACK_SIGNING_SECRET" in lines[0] and "SLACK_BOT_TOKEN" in lines[0] and "REDIS_URL" in lines[0]


def test_invalid_setting_names_the_variable_and_what_is_expected():
    env = {"PATH": "/usr/bin:/bin", "PORT": "eighty"}
    result = subprocess.run([THREADLINE, "web"], env=env, capture_output=True, text=True)
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == "threadline: invalid setting PORT='eighty': expected a TCP port number (1-65535)"
    )


def test_a_kept_alive_connection_still_answers_after_an_idle_gap(stack: Stack):
    """Load balancers and client pools reuse a connection after tens of seconds of idle; a
    request sent on one the server is closing gets no response (a lost button click)."""
    connection = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=10)
    try:
        connection.request("GET", "/healthz")
        assert connection.getresponse().read().strip() == b"ok"
        time.sleep(IDLE_GAP_S)  # the idle gap is the input under test, not synchronisation
        connection.request("GET", "/healthz")
        assert connection.getresponse().read().strip() == b"ok"
    finally:
        connection.close()


IDLE_GAP_S = 3.5  # longer than gunicorn's own keep-alive default (2 s)
