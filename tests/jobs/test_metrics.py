"""Metrics recorded in this process, read back from prometheus_client's registry: the model's
requests against the fake model over HTTP, queues on a real Redis, approvals, projection repairs."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from redis import Redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from agent.loop.ports import ParkedCall
from agent.messages import Message, TextPart, ToolCall, user_message
from agent.model.base import ModelRequest
from agent.model.openai import OpenAICompatibleModel
from agent.model.retrying import RetryingModel, RetryPolicy
from agent.projection.projector import project_strict
from agent.projection.report import ProjectionReporter
from agent.testing import FakeLLM, Reply, text
from jobs import metrics
from jobs.control import decide_approval
from jobs.input import record_input
from jobs.keys import SessionKey
from jobs.metrics_export import QueueCollector, exposition
from jobs.queues import SLACK_QUEUE, TURNS_QUEUE, queue
from jobs.quotas import Quota, Refused
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput
from jobs.turn.metered import MeteredModel
from jobs.turn.sink import RedisTurnSink

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000700")
REQUEST = ModelRequest(messages=[user_message("hi")])


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def metered(fake: FakeLLM, *, stream: bool) -> RetryingModel:
    client = OpenAICompatibleModel(fake.base_url, "fake-model", "sk-test", stream=stream)
    return RetryingModel(MeteredModel(client), RetryPolicy(base_delay_s=0.0), on_retry=metrics.model_retried)


def test_each_model_attempt_is_timed_and_a_retry_counted_by_its_cause(fake_llm: FakeLLM):
    fake_llm.script(Reply(status=503), text("fine"))
    before = {
        outcome: value("threadline_model_request_seconds_count", outcome=outcome)
        for outcome in ("ok", "server_error")
    }
    retries = value("threadline_model_retries_total", cause="server_error")
    first_tokens = value("threadline_model_first_token_seconds_count")

    answer = asyncio.run(metered(fake_llm, stream=True).complete(REQUEST))

    assert answer.message.text() == "fine"
    assert value("threadline_model_request_seconds_count", outcome="ok") == before["ok"] + 1
    failed = value("threadline_model_request_seconds_count", outcome="server_error")
    assert failed == before["server_error"] + 1
    assert value("threadline_model_retries_total", cause="server_error") == retries + 1
    assert value("threadline_model_first_token_seconds_count") == first_tokens + 1


def test_tokens_are_counted_from_the_usage_the_model_reports(fake_llm: FakeLLM):
    one, two = text("one"), text("two")
    fake_llm.script(one, two)
    before = {kind: value("threadline_model_tokens_total", kind=kind) for kind in ("input", "output")}
    model = metered(fake_llm, stream=False)  # the fake reports usage on whole completions
    for _ in range(2):
        asyncio.run(model.complete(REQUEST))
    # What the fake provider reported for each (its usage follows from the request it got).
    reported = [
        fake_llm.usage(body, reply) for body, reply in zip(fake_llm.requests[-2:], (one, two), strict=True)
    ]
    sent_in = sum(usage["prompt_tokens"] for usage in reported)
    sent_out = sum(usage["completion_tokens"] for usage in reported)
    assert sent_in > 0 and sent_out > 0
    assert value("threadline_model_tokens_total", kind="input") == before["input"] + sent_in
    assert value("threadline_model_tokens_total", kind="output") == before["output"] + sent_out


def enqueue_aged(redis: Redis, name: str, age_s: float) -> None:
    job = queue(redis, name).enqueue("os.getpid")
    job.enqueued_at = datetime.now(UTC) - timedelta(seconds=age_s)
    job.save()


def gauges(collector: QueueCollector) -> dict[tuple[str, str], float]:
    return {(s.name, s.labels["queue"]): s.value for family in collector.collect() for s in family.samples}


def test_queue_depth_and_the_oldest_jobs_age_are_read_at_scrape_time(redis: Redis):
    collector = QueueCollector(redis)
    assert gauges(collector)[("threadline_queue_jobs", TURNS_QUEUE)] == 0
    enqueue_aged(redis, TURNS_QUEUE, 90)
    enqueue_aged(redis, TURNS_QUEUE, 5)

    read = gauges(collector)

    assert read[("threadline_queue_jobs", TURNS_QUEUE)] == 2
    assert 90 <= read[("threadline_queue_oldest_job_age_seconds", TURNS_QUEUE)] < 100
    assert read[("threadline_queue_jobs", SLACK_QUEUE)] == 0
    assert read[("threadline_queue_oldest_job_age_seconds", SLACK_QUEUE)] == 0


def test_a_scrape_without_redis_still_answers_and_counts_the_error():
    unreachable = Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    errors = value("threadline_redis_errors_total", where="scrape")

    names = {family.name for family in text_string_to_metric_families(exposition(unreachable).decode())}

    assert "threadline_turns_started" in names and "threadline_queue_jobs" not in names
    assert value("threadline_redis_errors_total", where="scrape") == errors + 1


def park_one(redis: Redis) -> str:
    store = SessionStore(redis, KEY)
    call = ToolCall(id="c1", name="shell", arguments='{"command": "ls"}')
    asyncio.run(RedisTurnSink(store, "turn-1").park("step-1", [ParkedCall(call, None)]))
    return "step-1:c1"


def test_a_decision_is_counted_with_how_long_the_call_waited(redis: Redis):
    approval_id = park_one(redis)
    decided = value("threadline_approvals_total", decision="approved")
    denied = value("threadline_approvals_total", decision="denied")
    waits = value("threadline_approval_wait_seconds_count", decision="approved")

    assert decide_approval(redis, KEY, approval_id, "approved", by="U1", turn_timeout_s=60).ok
    assert not decide_approval(redis, KEY, approval_id, "denied", by="U2", turn_timeout_s=60).ok

    assert value("threadline_approvals_total", decision="approved") == decided + 1
    assert value("threadline_approval_wait_seconds_count", decision="approved") == waits + 1
    assert value("threadline_approvals_total", decision="denied") == denied  # the second click did nothing


def test_projection_repairs_are_counted_by_kind():
    reporter = ProjectionReporter(telemetry=metrics.projection_repaired)
    orphans = [Message(role="tool", tool_call_id=f"x{n}", content=[TextPart(text="r")]) for n in range(3)]
    dropped = value("threadline_projection_repairs_total", kind="dropped_orphan")

    history = [Message(role="assistant", content=[TextPart(text="hi")]), *orphans, user_message("go")]
    project_strict(history, reporter)
    reporter.report()

    assert value("threadline_projection_repairs_total", kind="dropped_orphan") == dropped + 3


def test_inputs_are_counted_as_recorded_deduplicated_or_refused(redis: Redis):
    counts = {r: value("threadline_inputs_total", result=r) for r in ("recorded", "deduplicated", "refused")}
    quota = Quota(key="tl:quota:T1:user:U1", limit=1, window_s=60, refusal="one a minute")

    def record(ts: str, dedupe: str) -> object:
        user_input = UserInput(text="hi", user="U1", ts=ts)
        return record_input(
            redis, KEY, user_input, turn_timeout_s=60, parked=(), dedupe_keys=[dedupe], dedupe_ttl_s=60,
            quotas=[quota],
        )  # fmt: skip

    assert record("1700000000.000700", "tl:dedupe:T1:event:E1") == "wire"
    assert record("1700000000.000700", "tl:dedupe:T1:event:E1") == "duplicate"
    assert isinstance(record("1700000000.000800", "tl:dedupe:T1:event:E2"), Refused)

    assert {r: value("threadline_inputs_total", result=r) - n for r, n in counts.items()} == {
        "recorded": 1, "deduplicated": 1, "refused": 1,
    }  # fmt: skip
