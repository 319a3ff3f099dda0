"""Slack faults on every outbound method a turn uses: the thread still ends up right, once.

A turn with a tool step touches chat.postMessage (card, answer), chat.update (card edits) and
assistant.threads.setStatus. Each answers its next calls with 429 twice (Retry-After: 1), then
503, then a reply that comes after the client gave up (the work was done). The status gets its
own storm: the others delay the card until the turn is over, and a status is only set while a
card is running.
"""

from __future__ import annotations

import collections

from agent.testing import calls, text
from gateway.sandbox.fake_slack import Fault
from tests.polling import wait_for
from tests.slack_events import mention
from tests.thread_view import bot_messages, shown

METHODS = ("chat.postMessage", "chat.update", "assistant.threads.setStatus")


def storm(fake_slack, methods: tuple[str, ...] = METHODS[:2]) -> None:
    for method in methods:  # consumed in this order by the method's next calls
        fake_slack.inject(Fault(method, count=2, status=429, retry_after=1))
        fake_slack.inject(Fault(method, count=1, status=503))
        fake_slack.inject(Fault(method, count=1, after_work=True, delay_s=3))


def test_a_turn_under_a_slack_storm_shows_one_card_and_one_answer(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(SLACK_TIMEOUT_SECONDS="1")
    # a tool long enough for the card to be shown running (and the status set) despite the storm
    fake_llm.script(calls(("c1", "shell", {"command": "sleep 10", "timeout": 30})), text("the final answer"))
    root = fake_slack.add_user_message("C111", "<@UBOT0001> look", user="W222")
    storm(fake_slack)
    assert stack.send_event(mention("look", ts=root["ts"])).status_code == 200

    def answered() -> bool:
        return any("the final answer" in shown(m) for m in bot_messages(fake_slack, "C111", root["ts"]))

    wait_for(answered, timeout=90, what="the answer through the storm")
    faulted = collections.Counter(c.method for c in fake_slack.calls() if c.outcome.startswith("fault:"))
    assert all(faulted[method] >= 1 for method in METHODS[:2]), faulted
    fake_slack.state.faults.clear()
    texts = [shown(m) for m in bot_messages(fake_slack, "C111", root["ts"])]
    assert sum("the final answer" in t for t in texts) == 1
    cards = [t for t in texts if "sleep 10" in t]
    assert len(cards) == 1  # one progress card, edited in place
    assert texts.index(cards[0]) < next(i for i, t in enumerate(texts) if "the final answer" in t)


def test_a_status_storm_delays_nothing_else(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(SLACK_TIMEOUT_SECONDS="1")
    fake_llm.script(calls(("c1", "shell", {"command": "sleep 6", "timeout": 30})), text("done despite it"))
    root = fake_slack.add_user_message("C111", "<@UBOT0001> wait", user="W222")
    storm(fake_slack, ("assistant.threads.setStatus",))
    stack.send_event(mention("wait", ts=root["ts"]))
    wait_for(lambda: any("done despite it" in shown(m) for m in bot_messages(fake_slack, "C111", root["ts"])),
             timeout=60, what="the answer")  # fmt: skip
    statuses = fake_slack.calls("assistant.threads.setStatus")
    assert any(c.outcome.startswith("fault:") for c in statuses)
    shown_statuses = fake_slack.state.statuses  # a status that was never set needs no clearing
    wait_for(lambda: not shown_statuses or shown_statuses[-1]["status"] == "", what="no status left behind")
    texts = [shown(m) for m in bot_messages(fake_slack, "C111", root["ts"])]
    assert sum("done despite it" in t for t in texts) == 1


def test_notices_of_two_turns_arrive_in_order_through_5xx(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack()
    fake_slack.inject(Fault("chat.postMessage", count=2, status=500))  # delivery retries after 5 s, then 10 s
    fake_llm.script(text("first answer"), text("second answer"))
    root = fake_slack.add_user_message("C111", "<@UBOT0001> one", user="W222")
    stack.send_event(mention("one", ts=root["ts"]))
    wait_for(lambda: any("first answer" in shown(m) for m in bot_messages(fake_slack, "C111", root["ts"])),
             timeout=90, what="the first answer")  # fmt: skip
    reply = fake_slack.add_user_message("C111", "<@UBOT0001> two", user="W222", thread_ts=root["ts"])
    stack.send_event(mention("two", ts=reply["ts"], thread_ts=root["ts"]))
    wait_for(lambda: any("second answer" in shown(m) for m in bot_messages(fake_slack, "C111", root["ts"])),
             timeout=90, what="the second answer")  # fmt: skip
    texts = [shown(m) for m in bot_messages(fake_slack, "C111", root["ts"])]
    answers = [t for t in texts if "answer" in t]
    assert answers == ["first answer", "second answer"]
