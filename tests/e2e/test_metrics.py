"""Prometheus metrics end to end: a real turn through web and the workers, then both scraped."""

from __future__ import annotations

from collections import Counter

import httpx
from prometheus_client.parser import text_string_to_metric_families

from agent.testing import FakeLLM, Reply, calls, text
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import free_port
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


def test_one_turn_moves_web_and_worker_counters_by_exactly_that_turn(
    make_stack: StackFactory, fake_slack: FakeSlack, fake_llm: FakeLLM
):
    port = free_port()
    stack = make_stack(METRICS_PORT=str(port))
    web_url, worker_url = f"http://127.0.0.1:{stack.port}/metrics", f"http://127.0.0.1:{port}/metrics"
    worker_before = wait_for(lambda: scraped(worker_url), what="the worker's metrics endpoint")
    web_before = scrape(web_url)
    slack_calls_before = len(fake_slack.calls())
    root = fake_slack.add_user_message("C111", "<@UBOT0001> take notes", user="W222")
    fake_llm.script(
        Reply(status=429, headers={"Retry-After": "0"}),  # retried once, at once
        calls(("c1", "write_file", {"path": "notes.txt", "content": "one"}), ("c2", "no_such_tool", {})),
        text("Noted."),
    )

    assert stack.send_event(mention("take notes", ts=root["ts"])).status_code == 200
    wait_for(lambda: any(m.get("text") == "Noted." for m in fake_slack.thread("C111", root["ts"])),
             what="the answer")  # fmt: skip

    # Slack calls, from both processes, are exactly those the fake Slack answered meanwhile.
    def slack_calls_match() -> bool:
        answered = Counter((c.method, c.outcome) for c in fake_slack.calls()[slack_calls_before:])
        pairs = [(web_before, scrape(web_url)), (worker_before, scrape(worker_url))]
        return slack_calls_counted(pairs) == answered

    wait_for(slack_calls_match, what="Slack calls counted as the fake Slack answered them")
    web, worker = scrape(web_url), scrape(worker_url)

    assert moved(web_before, web, "threadline_inputs_total", result="recorded") == 1
    assert moved(web_before, web, "threadline_slack_request_seconds_count", kind="event") == 1
    assert ("threadline_queue_jobs", frozenset({("queue", "turns")})) in web

    assert moved(worker_before, worker, "threadline_turns_started_total") == 1
    assert moved(worker_before, worker, "threadline_turns_finished_total", outcome="completed") == 1
    assert moved(worker_before, worker, "threadline_turn_seconds_count", outcome="completed") == 1
    assert moved(worker_before, worker, "threadline_turn_steps_sum") == 2
    assert moved(worker_before, worker, "threadline_model_request_seconds_count", outcome="ok") == 2
    assert moved(worker_before, worker, "threadline_model_request_seconds_count", outcome="rate_limited") == 1
    assert moved(worker_before, worker, "threadline_model_retries_total", cause="rate_limited") == 1
    assert moved(worker_before, worker, "threadline_model_first_token_seconds_count") == 2
    assert moved(worker_before, worker, "threadline_tool_calls_total", tool="write_file", outcome="ok") == 1
    # The model named a tool that does not exist: counted, under no name the model chose.
    assert moved(worker_before, worker, "threadline_tool_calls_total", tool="unknown", outcome="error") == 1
    assert not any("no_such_tool" in str(labels) for _, labels in worker)
    assert moved(worker_before, worker, "threadline_tool_call_seconds_count", tool="write_file") == 1
