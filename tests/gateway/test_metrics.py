"""Gateway metrics: Slack API calls and 429s against the fake Slack over HTTP, what web serves on
/metrics, the kind of a Slack request, the multiprocess directory a process starts with, and a
METRICS_PORT already taken."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import wsgiref.util
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from slack_sdk.errors import SlackApiError

from gateway.processes.web import request_kind, routes
from gateway.sandbox.fake_slack import APP_TOKEN, FakeSlack, Fault
from gateway.sandbox.signing import event_request, form_request, interaction_request
from gateway.sandbox.stack import BOT_TOKEN
from gateway.slack_client import web_client
from jobs.settings import Settings


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def client_for(api_url: str):
    return web_client(Settings.load(SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_API_URL=api_url))


def test_a_429_is_counted_with_the_retry_after_waited_and_the_call_once(fake_slack: FakeSlack):
    fake_slack.inject(Fault("chat.postMessage", status=429, error="ratelimited", retry_after=0))
    calls = value("threadline_slack_api_calls_total", method="chat.postMessage", error="ok")
    limited = value("threadline_slack_rate_limited_total", method="chat.postMessage")
    waited = value("threadline_slack_retry_after_seconds_total", method="chat.postMessage")

    client_for(fake_slack.api_url).chat_postMessage(channel="C111", text="hello")

    assert value("threadline_slack_api_calls_total", method="chat.postMessage", error="ok") == calls + 1
    assert value("threadline_slack_rate_limited_total", method="chat.postMessage") == limited + 1
    # slack_sdk waits Retry-After plus up to a second of jitter.
    assert 0 < value("threadline_slack_retry_after_seconds_total", method="chat.postMessage") - waited < 1.5


def test_slack_errors_are_counted_by_code_and_an_answer_without_one_as_unexpected(fake_slack: FakeSlack):
    fake_slack.inject(Fault("chat.update", status=500, error="<html>Bad Gateway</html>"))
    before = {code: value("threadline_slack_api_calls_total", method="chat.update", error=code)
              for code in ("message_not_found", "unexpected_response")}  # fmt: skip
    client = client_for(fake_slack.api_url)
    for _ in range(2):
        with pytest.raises(SlackApiError):
            client.chat_update(channel="C111", ts="1.000001", text="x")
    after = {code: value("threadline_slack_api_calls_total", method="chat.update", error=code)
             for code in before}  # fmt: skip
    assert {code: after[code] - before[code] for code in before} == {
        "message_not_found": 1, "unexpected_response": 1,
    }  # fmt: skip
    assert not any("html" in str(metric.samples) for metric in REGISTRY.collect())


def test_the_kind_of_a_slack_request_comes_from_its_signed_body():
    event, _ = event_request("s", {"type": "event_callback", "event": {"type": "app_mention"}})
    command, _ = form_request("s", {"command": "/agent", "text": "status"})
    click, _ = interaction_request("s", {"type": "block_actions"})
    assert request_kind(event, "application/json") == "event"
    assert request_kind(command, "application/x-www-form-urlencoded") == "command"
    assert request_kind(click, "application/x-www-form-urlencoded") == "interaction"
    assert request_kind(b"text=command", "application/x-www-form-urlencoded") == "other"


def test_web_serves_metrics_on_get_only():
    app = routes(lambda environ, start: [b""], scrape=lambda: b"threadline_turns_started_total 0.0\n")

    def get(method: str) -> tuple[str, bytes]:
        environ = {"PATH_INFO": "/metrics", "REQUEST_METHOD": method}
        wsgiref.util.setup_testing_defaults(environ)
        status: list[str] = []
        body = b"".join(app(environ, lambda s, headers: status.append(s)))
        return status[0], body

    assert get("GET") == ("200 OK", b"threadline_turns_started_total 0.0\n")
    assert get("POST")[0] == "404 Not Found"


PROBE = """
import os, pathlib
from gateway.processes.metrics_dir import prepare_metrics_dir
path = prepare_metrics_dir("web")
from prometheus_client import Counter, values
Counter("probe_total", "probe").inc()
print(path, sorted(p.name.split("_")[0] for p in path.iterdir()), values.ValueClass.__name__)
"""


def test_a_process_starts_with_an_empty_directory_of_its_own_under_the_operators(tmp_path: Path):
    stale = tmp_path / "web"
    stale.mkdir()
    (stale / "counter_999999.db").write_bytes(b"left by an earlier run")
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    path, files, value_class = out.stdout.split(" ", 1)[0], out.stdout.split(" ", 1)[1], out.stdout
    assert path == str(stale)
    assert files.startswith("['counter']")  # only this process's file: the stale one is gone
    assert not (stale / "counter_999999.db").exists()
    assert "MmapedValue" in value_class or "MultiProcessValue" in value_class


HOLDER = PROBE + "input()  # holds the directory until the test says\n"
SECOND = """
from gateway.processes.metrics_dir import prepare_metrics_dir
from jobs.settings import SettingsError
try:
    prepare_metrics_dir("web")
except SettingsError as error:
    print(error)
else:
    print("started")
"""


def test_a_second_process_with_the_same_directory_stops_before_emptying_it(tmp_path: Path):
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and "['counter']" in holder.stdout.readline()
        second = subprocess.run([sys.executable, "-c", SECOND], env=env, capture_output=True, text=True)
        assert second.stdout.strip() == (
            f"threadline: another process on this machine keeps its metrics in {tmp_path / 'web'} (the"
            " same PORT or METRICS_PORT twice): give each process its own port"
        )
        assert [p.name.split("_")[0] for p in (tmp_path / "web").iterdir()] == ["counter"]
    finally:
        holder.communicate("\n", timeout=30)
    after = subprocess.run([sys.executable, "-c", SECOND], env=env, capture_output=True, text=True)
    assert after.stdout.strip() == "started"  # the lock ends with its process


@pytest.mark.parametrize(
    "command",
    [["worker"], ["worker", "--role", "turns"], ["worker", "--role", "delivery"], ["web", "--socket"]],
)
def test_a_metrics_port_already_taken_stops_the_process_with_one_line(
    tmp_path: Path, redis_url: str, command: list[str]
):
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "METRICS_PORT": str(port), "REDIS_URL": redis_url, "SLACK_BOT_TOKEN": BOT_TOKEN,
               "SLACK_APP_TOKEN": APP_TOKEN, "SLACK_API_URL": "http://127.0.0.1:9/api/",
               "AGENT_WORKDIR": str(tmp_path / "ws"), "SLACK_APPROVERS": "U0APPROVER"}  # fmt: skip
        cli = [sys.executable, "-m", "gateway.processes.cli", *command]
        ended = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=60)
    assert ended.returncode == 2
    assert ended.stderr.splitlines() == [
        f"threadline: cannot serve metrics on METRICS_PORT={port}: Address already in use"
    ]
