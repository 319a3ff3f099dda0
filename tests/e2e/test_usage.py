"""Model usage through the real web process and workers: counted per step on the wire and in
Redis, shown by `!status` with its cost, and a spent daily budget refuses the next new turn
(a new thread, or `!resume`)."""

from __future__ import annotations

import json

from agent.testing import calls, text
from jobs.keys import SessionKey
from jobs.session.store import SessionStore
from jobs.usage import Prices, session_usage, usage_of_day
from tests.e2e.test_commands import say
from tests.e2e.test_live_turns import state
from tests.e2e.test_quotas import answered, mention_new_thread, nothing_recorded
from tests.polling import wait_for
from tests.thread_view import ephemerals

OVER_BUDGET = "You have used today's model budget"


def step_end_usages(redis, key: SessionKey) -> list[dict]:
    records = SessionStore(redis, key).read_wire()
    events = [r["event"] for r in records if r.get("type") == "context.append_loop_event"]
    return [e["usage"] for e in events if e["type"] == "step.end"]


def test_usage_is_counted_shown_with_its_cost_and_a_spent_budget_refuses_new_turns(
    make_stack, fake_slack, fake_llm, redis
):
    stack = make_stack(BUDGET_TOKENS_PER_USER_PER_DAY="1", LLM_PRICE_INPUT="2", LLM_PRICE_OUTPUT="8")
    fake_llm.script(calls(("c1", "list_dir", {"path": "."})), text("two files"))
    key = mention_new_thread(stack, fake_slack, "W222")
    wait_for(lambda: state(redis, key) == "idle" and len(fake_llm.accepted()) == 2, what="the turn to end")

    prompts = [len(json.dumps(body["messages"])) // 4 for body in fake_llm.accepted()]
    assert [usage["input_tokens"] for usage in step_end_usages(redis, key)] == prompts
    spent = session_usage(redis, key)
    assert (spent.input, spent.steps, spent.estimated) == (sum(prompts), 2, 0)
    today = usage_of_day(redis)
    assert today[("T111", "user", "W222")] == spent == today[("T111", "channel", "C111")]

    say(stack, fake_slack, key, "!status", user="W333")
    shown = ephemerals(fake_slack, "W333")[-1]["text"]
    assert f"{spent.tokens:,} tokens" in shown and f"${spent.cost(Prices(2, 8, 2)):,.4f}" in shown

    over = mention_new_thread(stack, fake_slack, "W222")
    assert ephemerals(fake_slack, "W222")[-1]["text"].startswith(OVER_BUDGET)
    assert nothing_recorded(redis, over) and len(fake_llm.requests) == 2
    say(stack, fake_slack, key, "!resume", user="W222")  # a resumed turn is a new turn too
    assert ephemerals(fake_slack, "W222")[-1]["text"].startswith(OVER_BUDGET)
    answered(fake_slack, mention_new_thread(stack, fake_slack, "W333"))  # a budget is per person
