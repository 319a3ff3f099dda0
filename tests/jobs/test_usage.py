"""Usage sums on a real Redis: once per step, in every place it counts, with the days' TTLs."""

from __future__ import annotations

import asyncio

from agent.messages import Origin, user_message
from agent.wire import AppendLoopEvent, ApplyCompaction, StepBegin
from jobs.keys import SessionKey, daily_usage_key
from jobs.session.store import SessionStore
from jobs.turn.sink import RedisTurnSink
from jobs.usage import (
    DAY_TTL_S,
    Prices,
    Totals,
    UsageMeter,
    charged_person,
    daily_usage,
    session_usage,
    turn_usage,
    usage_of_day,
    utc_day,
)

ROOT = SessionKey(team="T1", channel="C1", thread_ts="100.1")
CHILD = SessionKey(team="T1", channel="C1", thread_ts="100.1-a1")
USAGE = {"input_tokens": 1000, "output_tokens": 200, "cached_tokens": 600, "estimated": False}


def test_a_step_recorded_twice_is_counted_once_everywhere(redis):
    sink = RedisTurnSink(
        SessionStore(redis, CHILD), "t1", meter=UsageMeter(redis, CHILD, "t1", "U1", root=ROOT)
    )
    begin = AppendLoopEvent(event=StepBegin(uuid="t1-s1", turn_id="t1", step=1, usage=USAGE))
    for _ in range(2):  # a retried append: the same once key, the same step
        asyncio.run(sink.record(begin, "t1-s1:begin"))
    one = Totals(input=1000, output=200, cached=600, steps=1)
    assert turn_usage(redis, CHILD, "t1") == session_usage(redis, CHILD) == session_usage(redis, ROOT) == one
    assert daily_usage(redis, "T1", "user", "U1") == daily_usage(redis, "T1", "channel", "C1") == one
    assert 0 < redis.ttl(daily_usage_key(utc_day(), "T1", "user", "U1")) <= DAY_TTL_S
    assert set(usage_of_day(redis)) == {("T1", "user", "U1"), ("T1", "channel", "C1")}


def test_estimated_steps_are_counted_and_said_to_be_estimates(redis):
    meter = UsageMeter(redis, ROOT, "t1", None)
    meter.count("t1-s1", USAGE)
    meter.count("t1-s2", {**USAGE, "estimated": True})
    spent = session_usage(redis, ROOT)
    assert (spent.steps, spent.estimated, spent.tokens) == (2, 1, 2400)
    line = spent.describe(Prices(input=2.0, output=8.0, cached=0.5))
    # 800 uncached × $2 + 1,200 cached × $0.5 + 400 out × $8, per million
    assert line.startswith("2,400 tokens (2,000 in, 1,200 of them cached; 400 out), about $0.0054")
    assert "estimated for 1 of 2 model calls" in line
    assert "$" not in spent.describe(None)


def test_hostile_usage_numbers_count_as_nothing(redis):
    UsageMeter(redis, ROOT, "t1", None).count(
        "t1-s1", {"input_tokens": -5, "output_tokens": "9", "cached_tokens": 1.5}
    )
    assert session_usage(redis, ROOT) == Totals(steps=1)


def test_the_person_charged_is_who_the_turn_answers_else_the_owner():
    first = user_message("hi", origin=Origin.model_validate({"kind": "user", "user": "U1", "ts": "1.0"}))
    later = user_message("more", origin=Origin.model_validate({"kind": "user", "user": "U2", "ts": "2.0"}))
    task = user_message("do it", origin=Origin(kind="user", trigger="agent"))
    assert charged_person([first, later], "U9") == "U2"
    assert charged_person([task], "U9") == "U9"


def test_a_compaction_in_a_turn_is_counted_once_under_its_record_key(redis):
    sink = RedisTurnSink(SessionStore(redis, ROOT), "t1", meter=UsageMeter(redis, ROOT, "t1", "U1"))
    applied = ApplyCompaction(summary="s", context_summary="s", compacted_count=2, usage=USAGE)
    for _ in range(2):
        asyncio.run(sink.record(applied, "t1-s3:compaction:apply"))
    assert turn_usage(redis, ROOT, "t1") == Totals(input=1000, output=200, cached=600, steps=1)
