"""A message the agent takes is marked 👀 at once, and ✅ or ⚠️ when its turn ends (SLACK_REACTIONS),
through the real web, workers and the fake Slack's reactions.add / reactions.remove."""

from __future__ import annotations

import threading
from typing import Any

from agent.testing import text
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from tests.polling import wait_for
from tests.slack_events import mention, message

CHANNEL = "C111"


def reactions_on(fake_slack: FakeSlack, ts: str, thread_ts: str | None = None) -> list[str]:
    shown = fake_slack.thread(CHANNEL, thread_ts or ts)
    found = next((m for m in shown if m["ts"] == ts), {})
    return [r["name"] for r in found.get("reactions", []) if BOT_USER_ID in r["users"]]


def held_model(fake_llm: Any) -> threading.Event:
    """The model answers "done" once the returned event is set."""
    release = threading.Event()

    def model(body: dict[str, Any]) -> Any:
        release.wait(30)
        return text("done")

    fake_llm.default = model
    return release


def test_a_mention_is_marked_seen_while_it_runs_and_done_when_answered(stack, fake_slack, fake_llm):
    release = held_model(fake_llm)
    root = fake_slack.add_user_message(CHANNEL, f"<@{BOT_USER_ID}> build it", user="W222")
    try:
        assert stack.send_event(mention("build it", ts=root["ts"])).status_code == 200
        wait_for(lambda: reactions_on(fake_slack, root["ts"]) == ["eyes"], what="👀 on the mention")
        steer = fake_slack.add_user_message(CHANNEL, "and test it", user="W222", thread_ts=root["ts"])
        stack.send_event(message("and test it", ts=steer["ts"], thread_ts=root["ts"]))
        wait_for(
            lambda: reactions_on(fake_slack, steer["ts"], root["ts"]) == ["eyes"], what="👀 on the reply"
        )
    finally:
        release.set()
    wait_for(lambda: reactions_on(fake_slack, root["ts"]) == ["white_check_mark"], what="✅ on the mention")
    wait_for(
        lambda: reactions_on(fake_slack, steer["ts"], root["ts"]) == ["white_check_mark"],
        what="✅ on the reply the same turn took",
    )


def test_a_failed_turn_ends_with_a_warning(stack, fake_slack, fake_llm):
    refused = text("never shown")
    refused.status = 400  # the provider refuses the request: the turn fails
    fake_llm.default = lambda body: refused
    root = fake_slack.add_user_message(CHANNEL, f"<@{BOT_USER_ID}> build it", user="W222")
    stack.send_event(mention("build it", ts=root["ts"]))
    wait_for(lambda: reactions_on(fake_slack, root["ts"]) == ["warning"], what="⚠️ on the mention")


def test_reactions_can_be_turned_off(make_stack, fake_slack, fake_llm):
    stack = make_stack(SLACK_REACTIONS="false")
    fake_llm.script(text("done"))
    root = fake_slack.add_user_message(CHANNEL, f"<@{BOT_USER_ID}> build it", user="W222")
    stack.send_event(mention("build it", ts=root["ts"]))
    wait_for(
        lambda: any(m.get("text") == "done" for m in fake_slack.thread(CHANNEL, root["ts"])),
        what="the answer",
    )
    assert not fake_slack.calls("reactions.add") and not fake_slack.calls("reactions.remove")
