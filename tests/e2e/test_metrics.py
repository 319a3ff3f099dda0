"""Prometheus metrics end to end: a real turn through web and the workers, then every endpoint
scraped: web's `/metrics`, and METRICS_PORT of the worker supervisor, of workers run alone and of
`web --socket`."""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent.testing import FakeLLM, Reply, calls, text
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.ports import free_port
from gateway.sandbox.stack import THREADLINE
from tests.conftest import StackFactory
from tests.polling import wait_for
from tests.slack_events import mention

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    answer = httpx.get(url, timeout=10)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def scraped(url: str) -> Samples | None:
    try:
        return scrape(url)
    except httpx.TransportError:
        return None


def moved(before: Samples, after: Samples, name: str, **labels: str) -> float:
    key = (name, frozenset(labels.items()))
    return after.get(key, 0.0) - before.get(key, 0.0)


def slack_calls_counted(pairs: list[tuple[Samples, Samples]]) -> Counter[tuple[str, str]]:
    counted: Counter[tuple[str, str]] = Counter()
    for before, after in pairs:
        for (name, labels), value in after.items():
            if name == "threadline_slack_api_calls_total":
                by = dict(labels)
                counted[(by["method"], by["error"])] += int(value - before.get((name, labels), 0.0))
    return +counted  # only what moved


def take_notes(fake_slack: FakeSlack, fake_llm: FakeLLM, send: Callable[[dict[str, Any]], None]) -> None:
    """One turn: a 429 retried, a tool that ran and one that does not exist, then the answer."""
    root = fake_slack.add_user_message("C111", "<@UBOT0001> take notes", user="W222")
    fake_llm.script(
        Reply(status=429, headers={"Retry-After": "0"}),  # retried once, at once
        calls(("c1", "write_file", {"path": "notes.txt", "content": "one"}), ("c2", "no_such_tool", {})),
        text("Noted."),
    )
    send(mention("take notes", ts=root["ts"]))
    wait_for(lambda: any(m.get("text") == "Noted." for m in fake_slack.thread("C111", root["ts"])),
             what="the answer")  # fmt: skip


def metrics_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/metrics"


def scraped_before(*urls: str) -> dict[str, Samples]:
    return {url: wait_for(lambda url=url: scraped(url), what=f"metrics at {url}") for url in urls}


def scraped_after(fake_slack: FakeSlack, slack_calls: int, before: dict[str, Samples]) -> dict[str, Samples]:
    """Every endpoint scraped once the Slack calls they counted (each process its own) are
    exactly those the fake Slack answered after its first `slack_calls`."""

    def counted_as_answered() -> dict[str, Samples] | None:
        answered = Counter((c.method, c.outcome) for c in fake_slack.calls()[slack_calls:])
        after = {url: scrape(url) for url in before}
        counted = slack_calls_counted([(before[url], after[url]) for url in before])
        return after if counted == answered else None

    return wait_for(counted_as_answered, what="Slack calls counted as the fake Slack answered them")


def assert_one_mention_recorded(before: Samples, after: Samples) -> None:
    assert moved(before, after, "threadline_inputs_total", result="recorded") == 1
    assert moved(before, after, "threadline_slack_request_seconds_count", kind="event") == 1
    assert ("threadline_queue_jobs", frozenset({("queue", "turns")})) in after


def assert_the_turn_counted(before: Samples, after: Samples) -> None:
    assert moved(before, after, "threadline_turns_started_total") == 1
    assert moved(before, after, "threadline_turns_finished_total", outcome="completed") == 1
    assert moved(before, after, "threadline_turn_seconds_count", outcome="completed") == 1
    assert moved(before, after, "threadline_turn_steps_sum") == 2
    assert moved(before, after, "threadline_model_request_seconds_count", outcome="ok") == 2
    assert moved(before, after, "threadline_model_request_seconds_count", outcome="rate_limited") == 1
    assert moved(before, after, "threadline_model_retries_total", cause="rate_limited") == 1
    assert moved(before, after, "threadline_model_first_token_seconds_count") == 2
    assert moved(before, after, "threadline_tool_calls_total", tool="write_file", outcome="ok") == 1
    # The model named a tool that does not exist: counted, under no name the model chose.
    assert moved(before, after, "threadline_tool_calls_total", tool="unknown", outcome="error") == 1
    assert not any("no_such_tool" in str(labels) for _, labels in after)
    assert moved(before, after, "threadline_tool_call_seconds_count", tool="write_file") == 1


def test_one_turn_moves_web_and_worker_counters_by_exactly_that_turn(
    make_stack: StackFactory, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    port = free_port()
    stack = make_stack(METRICS_PORT=str(port))
    web_url, worker_url = metrics_url(stack.port), metrics_url(port)
    before, slack_calls = scraped_before(worker_url, web_url), len(fake_slack.calls())

    take_notes(fake_slack, fake_llm, lambda body: accepted(stack.send_event(body)))

    after = scraped_after(fake_slack, slack_calls, before)
    assert_one_mention_recorded(before[web_url], after[web_url])
    assert_the_turn_counted(before[worker_url], after[worker_url])


def accepted(answer: httpx.Response) -> None:
    assert answer.status_code == 200


def test_socket_mode_serves_on_metrics_port_what_web_would_from_memory(
    make_stack: StackFactory, fake_slack: FakeSlack, fake_llm: FakeLLM, tmp_path: Path
):
    socket_port, worker_port, files = free_port(), free_port(), tmp_path / "metrics"
    env = {"METRICS_PORT": str(socket_port), "PROMETHEUS_MULTIPROC_DIR": str(files)}
    stack = make_stack(workers=0, socket_mode=fake_slack.socket_mode, **env)
    stack.spawn("worker", [THREADLINE, "worker"], METRICS_PORT=str(worker_port))
    socket_url, worker_url = metrics_url(socket_port), metrics_url(worker_port)
    before, slack_calls = scraped_before(socket_url, worker_url), len(fake_slack.calls())

    take_notes(fake_slack, fake_llm, lambda body: fake_slack.socket_mode.send(events_api(body)))

    after = scraped_after(fake_slack, slack_calls, before)
    assert_one_mention_recorded(before[socket_url], after[socket_url])
    assert_the_turn_counted(before[worker_url], after[worker_url])
    # One process has nothing to add up: its values stay in memory, none in the operator's directory.
    assert sorted(path.name for path in files.iterdir()) == [
        f"worker-{worker_port}",
        f"worker-{worker_port}.lock",
    ]


def test_socket_mode_says_whether_its_connection_to_slack_is_open(
    make_stack: StackFactory, fake_slack: FakeSlack
):
    port = free_port()
    make_stack(workers=0, socket_mode=fake_slack.socket_mode, METRICS_PORT=str(port))
    connected = ("threadline_socket_mode_connected", frozenset())
    wait_for(lambda: (scraped(metrics_url(port)) or {}).get(connected) == 1.0, what="the connection, scraped")
    fake_slack.socket_mode.stop()  # Slack is gone: the client keeps trying, and says so meanwhile
    wait_for(lambda: scrape(metrics_url(port)).get(connected) == 0.0, what="the lost connection, scraped")


def events_api(body: dict[str, Any]) -> dict[str, Any]:
    return {"envelope_id": f"env-{body['event_id']}", "type": "events_api", "payload": body,
            "accepts_response_payload": False}  # fmt: skip


@pytest.mark.parametrize("worker_class", ["simple", "fork"])
def test_workers_run_alone_serve_their_own_metrics(
    make_stack: StackFactory, fake_slack: FakeSlack, fake_llm: FakeLLM, tmp_path: Path, worker_class: str
):
    """One worker per container, each serving its METRICS_PORT. A forking worker's jobs run in
    work horses, whose values reach it through files in a temporary directory, gone when it stops."""
    stack, temporary = make_stack(workers=0), tmp_path / "tmp"
    temporary.mkdir()
    urls = {}
    for role in ("delivery", "turns"):
        port = free_port()
        command = [THREADLINE, "worker", "--role", role, "--worker-class", worker_class]
        stack.spawn(role, command, METRICS_PORT=str(port), TMPDIR=str(temporary))
        urls[role] = metrics_url(port)
    before, slack_calls = scraped_before(metrics_url(stack.port), *urls.values()), len(fake_slack.calls())

    take_notes(fake_slack, fake_llm, lambda body: accepted(stack.send_event(body)))

    after = scraped_after(fake_slack, slack_calls, before)
    assert_the_turn_counted(before[urls["turns"]], after[urls["turns"]])
    assert moved(before[urls["delivery"]], after[urls["delivery"]], "threadline_turns_started_total") == 0
    assert slack_calls_counted([(before[urls["delivery"]], after[urls["delivery"]])])  # it posted the answer
    for role in urls:
        stack.processes[role].send_signal(signal.SIGTERM)
        assert stack.processes[role].wait(timeout=30) == 0
    assert not any("metrics" in path.name for path in temporary.iterdir())
