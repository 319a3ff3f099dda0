"""A call nobody decides on is denied once APPROVAL_TIMEOUT_SECONDS have passed, and said so."""

from __future__ import annotations

from agent.testing import calls, text
from tests.e2e.test_live_turns import card_with, click, start, state, tool_results
from tests.polling import wait_for
from tests.rq_state import scheduled
from tests.sandboxing import workspace_of
from tests.thread_view import buttons, shown, thread_texts

EXPIRED = 'Tool "shell" was not run because nobody approved the request within 2 s.'
NOTE = "Nobody approved `shell` within 2 s, so it was denied and not run."


def test_a_call_nobody_approves_in_time_is_denied_with_a_note_and_the_turn_goes_on(
    make_stack, fake_slack, fake_llm, redis, tmp_path
):
    stack = make_stack(APPROVAL_WAIVED_TOOLS="", APPROVAL_TIMEOUT_SECONDS="2")
    fake_llm.script(calls(("c1", "shell", {"command": "touch ran"})), text("understood, nothing ran"))
    key = start(stack, fake_slack, "deploy")
    card = card_with(fake_slack, key, "Approve")

    def now(message: dict) -> dict:
        return next(m for m in fake_slack.thread("C111", key.thread_ts) if m["ts"] == message["ts"])

    wait_for(lambda: "understood, nothing ran" in thread_texts(fake_slack, "C111", key.thread_ts),
             timeout=30, what="the turn to go on without the call")  # fmt: skip
    assert tool_results(fake_llm.accepted()[-1])["c1"].endswith(EXPIRED)
    assert thread_texts(fake_slack, "C111", key.thread_ts).count(NOTE) == 1
    decided = wait_for(
        lambda: next(
            m
            for m in fake_slack.thread("C111", key.thread_ts)
            if m["ts"] == card["ts"] and "Expired" in shown(m)
        ),
        what="the card to say it expired",
    )
    assert buttons(decided) == {}
    assert click(stack, fake_slack, card, "Approve") == "That request was already decided."
    wait_for(lambda: state(redis, key) == "idle", what="the turn to end")
    assert not (workspace_of(tmp_path, key) / "ran").exists()
    assert len(fake_llm.accepted()) == 2


def test_a_call_approved_in_time_is_not_expired_later(make_stack, fake_slack, fake_llm, redis, tmp_path):
    stack = make_stack(APPROVAL_WAIVED_TOOLS="", APPROVAL_TIMEOUT_SECONDS="2")
    fake_llm.script(
        calls(("c1", "shell", {"command": "echo yes > ran"})), text("done"), text("second answer")
    )
    key = start(stack, fake_slack, "deploy")
    card = card_with(fake_slack, key, "Approve")
    assert click(stack, fake_slack, card, "Approve") == "Approved `shell`."
    wait_for(lambda: "done" in thread_texts(fake_slack, "C111", key.thread_ts), what="the answer")
    # The expiry job still comes due; it must find nothing to deny.
    wait_for(lambda: not scheduled(redis), timeout=10, what="the expiry job to come due")
    wait_for(lambda: state(redis, key) == "idle", what="the turn to end")
    assert (workspace_of(tmp_path, key) / "ran").read_text() == "yes\n"
    assert not any("Nobody approved" in t for t in thread_texts(fake_slack, "C111", key.thread_ts))
