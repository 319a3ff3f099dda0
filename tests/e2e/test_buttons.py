"""Buttons, the "Stop agent run" shortcut and Slack's native Stop: who may click, what it does."""

from __future__ import annotations

import json
import time

import pytest

from agent.wire import AppendLoopEvent, ToolCallEvent
from gateway.listeners.actions import STALE
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import Stack
from jobs.keys import SessionKey
from jobs.session.approvals import Approval, ApprovalStore
from jobs.session.notices import (
    ApprovalRequestNotice,
    CancelledNotice,
    ProgressNotice,
    ToolLine,
    TurnCard,
    UnknownResultNotice,
)
from jobs.session.store import SessionStore
from tests.e2e.sessions import open_session, post, put_in_state, response_url
from tests.polling import wait_for
from tests.slack_events import agent_session_stopped, block_action, message_shortcut
from tests.thread_view import bot_messages, buttons, ephemerals, responses, shown


def click(stack: Stack, fake_slack: FakeSlack, card: dict, label: str, user: str = "W222") -> str:
    """Click a button on a message in the thread; returns the ephemeral answer to the clicker."""
    value = buttons(card)[label]
    action = {"Stop": "tl_stop", "Resume": "tl_resume", "Approve": "tl_approve", "Deny": "tl_deny"}
    before = len(responses(fake_slack))
    payload = block_action(
        action.get(label, "tl_inspect"),
        value,
        user=user,
        message_ts=card["ts"],
        response_url=response_url(fake_slack),
    )
    assert stack.send_interaction(payload).status_code == 200
    answer = responses(fake_slack)[before]
    assert answer["response_type"] == "ephemeral" and answer["replace_original"] is False
    return answer.get("text", "") if not answer.get("blocks") else json.dumps(answer["blocks"])


def delivered(fake_slack: FakeSlack, key: SessionKey, count: int) -> list[dict]:
    return wait_for(
        lambda: (
            (found := bot_messages(fake_slack, key.channel, key.thread_ts)) and len(found) >= count and found
        ),
        what=f"{count} bot messages",
    )


def running_card(turn_id: str = "t1") -> ProgressNotice:
    now = time.time()
    tool = ToolLine(tool_call_id="c1", name="shell", summary="pytest -x", state="running", started_at=now)
    return ProgressNotice(
        card=TurnCard(turn_id=turn_id, state="running", started_at=now, updated_at=now, tools=[tool])
    )


def test_stop_on_the_progress_card_stops_the_turn_for_its_initiator_only(make_stack, fake_slack, busy_turns):
    stack = make_stack(workers=2)  # one runs the turn, the other delivers its card meanwhile
    turn = busy_turns.start()
    card = wait_for(
        lambda: next((m for m in delivered(fake_slack, turn.key, 1) if "Stop" in buttons(m)), None),
        what="the progress card with Stop",
    )

    assert click(stack, fake_slack, card, "Stop", user="W333").startswith("Only <@W222>")
    busy_turns.assert_still_running(turn)
    assert click(stack, fake_slack, card, "Stop").startswith("Stopping the running turn")
    busy_turns.assert_stopped(turn)


def test_a_stop_click_without_a_response_url_still_stops_the_turn(make_stack, fake_slack, busy_turns):
    """Slack leaves response_url out of some surfaces' clicks: the click still acts, and answers 200
    (it used to raise inside the listener and answer 500, so Slack delivered the click again)."""
    stack = make_stack(workers=2)
    turn = busy_turns.start()
    card = wait_for(
        lambda: next((m for m in delivered(fake_slack, turn.key, 1) if "Stop" in buttons(m)), None),
        what="the progress card with Stop",
    )
    payload = block_action("tl_stop", buttons(card)["Stop"], message_ts=card["ts"], response_url="")
    del payload["response_url"]
    assert stack.send_interaction(payload).status_code == 200
    busy_turns.assert_stopped(turn)
    assert responses(fake_slack) == []


def test_resume_on_a_cancelled_notice(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    put_in_state(redis, key, "cancelled")
    post(redis, key, CancelledNotice(turn_id="t1", by="W222", text="Stopped by <@W222>."))
    notice = delivered(fake_slack, key, 2)[-1]
    assert shown(notice).endswith("Stopped by <@W222>.")

    assert click(stack, fake_slack, notice, "Resume").startswith("Resumed")
    texts = wait_for(lambda: [shown(m) for m in delivered(fake_slack, key, 3)][2:], what="the resume notice")
    assert texts == ["Resumed by <@W222>. Nothing that was interrupted is re-run."]


def test_unknown_result_notice_names_the_call_and_inspect_shows_its_full_arguments(
    stack, fake_slack, fake_llm, redis
):
    key = open_session(stack, fake_slack, fake_llm)
    arguments = {"command": "rm -rf build && make -j8 all " + "x" * 300}
    SessionStore(redis, key).append(
        AppendLoopEvent(
            event=ToolCallEvent(step_uuid="s1", tool_call_id="call_7", name="shell", args=arguments)
        )
    )
    put_in_state(redis, key, "interrupted")
    post(
        redis,
        key,
        UnknownResultNotice(tool_call_id="call_7", tool_name="shell", summary="rm -rf build && make"),
    )
    notice = delivered(fake_slack, key, 2)[-1]
    said = shown(notice)
    assert "`shell`" in said and "rm -rf build &amp;&amp; make" in said
    assert "unknown" in said and "Nothing was re-run." in said
    assert set(buttons(notice)) == {"Resume", "Inspect"}

    inspected = click(stack, fake_slack, notice, "Inspect", user="W333")
    assert "call_7" in inspected and "x" * 300 in inspected
    assert click(stack, fake_slack, notice, "Resume").startswith("Resumed")


def park(redis, key: SessionKey, approval_id: str = "ap1") -> None:
    approval = Approval(
        approval_id=approval_id,
        tool_call_id="call_1",
        tool_name="shell",
        summary="make deploy",
        step_uuid="s1",
    )
    ApprovalStore(SessionStore(redis, key)).park([approval])
    put_in_state(redis, key, "awaiting_approval")
    post(
        redis,
        key,
        ApprovalRequestNotice(
            approval_id=approval_id,
            tool_call_id="call_1",
            tool_name="shell",
            summary="make deploy",
            details="make deploy",
            reason="shell",
        ),
    )


def test_approve_records_the_decision_once_and_the_card_shows_it(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    park(redis, key)
    card = delivered(fake_slack, key, 2)[-1]
    assert "make deploy" in shown(card) and set(buttons(card)) == {"Approve", "Deny"}

    assert click(stack, fake_slack, card, "Approve", user="W333").startswith("Only an approver")
    assert click(stack, fake_slack, card, "Approve") == "Approved `shell`."
    assert click(stack, fake_slack, card, "Deny") == "That request was already decided."
    assert ApprovalStore(SessionStore(redis, key)).state("ap1") == "approved"

    decided = wait_for(
        lambda: (m := fake_slack.thread(key.channel, key.thread_ts)[2]) and not buttons(m) and m,
        what="the card without buttons",
    )
    assert "make deploy" in shown(decided) and "Approved by <@W222>" in shown(decided)
    assert len(bot_messages(fake_slack, key.channel, key.thread_ts)) >= 2  # edited, not reposted
    assert [m["ts"] for m in bot_messages(fake_slack, key.channel, key.thread_ts)][1] == card["ts"]


def test_an_operator_may_deny(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(SLACK_OPERATORS="W999", SLACK_APPROVERS="")  # approvers default to the operators
    key = open_session(stack, fake_slack, fake_llm)
    park(redis, key)
    card = delivered(fake_slack, key, 2)[-1]
    assert click(stack, fake_slack, card, "Deny", user="W999") == "Denied `shell`."
    assert ApprovalStore(SessionStore(redis, key)).decided_by("ap1") == "W999"
    wait_for(
        lambda: "Denied by <@W999>" in shown(fake_slack.thread(key.channel, key.thread_ts)[2]), what="edit"
    )


def test_a_button_naming_another_workspaces_session_is_refused(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    put_in_state(redis, key, "running")
    post(redis, key, running_card())
    card = delivered(fake_slack, key, 2)[-1]
    foreign = dict(card)
    foreign["blocks"] = json.loads(json.dumps(card["blocks"]).replace("T111:", "T999:"))
    assert click(stack, fake_slack, foreign, "Stop") == "That button no longer belongs to a session here."


@pytest.mark.parametrize("value", ['{"s":5}', "[]", '"x"', '{"s":{"team":"T111"}}'])
def test_a_button_value_of_the_wrong_shape_is_answered_as_stale(stack, fake_slack, redis, value):
    payload = block_action("tl_stop", value, response_url=response_url(fake_slack))

    answered = stack.send_interaction(payload)

    assert answered.status_code == 200
    assert [r.get("text") for r in responses(fake_slack)] == [STALE]
    assert redis.keys("tl:{*") == []


def test_the_stop_shortcut_on_any_message_of_the_thread(stack, fake_slack, busy_turns):
    turn = busy_turns.start()
    key = turn.key
    reply = fake_slack.add_user_message(key.channel, "hmm", user="W333", thread_ts=key.thread_ts)
    payload = message_shortcut(
        message_ts=reply["ts"], thread_ts=key.thread_ts, response_url=response_url(fake_slack)
    )
    assert stack.send_interaction(payload).status_code == 200
    assert responses(fake_slack)[-1]["text"].startswith("Stopping the running turn")
    busy_turns.assert_stopped(turn)

    unrelated = fake_slack.add_user_message(key.channel, "other", user="W222")
    payload = message_shortcut(
        message_ts=unrelated["ts"], thread_ts=None, response_url=response_url(fake_slack)
    )
    stack.send_interaction(payload)
    assert responses(fake_slack)[-1]["text"] == "There is no agent session in that thread."


def test_slacks_native_stop_button_stops_the_turn(stack, fake_slack, busy_turns):
    turn = busy_turns.start()
    stopped = agent_session_stopped(thread_ts=turn.key.thread_ts, user="W333")
    assert stack.send_event(stopped).status_code == 200
    assert ephemerals(fake_slack, "W333")[-1]["text"].startswith("Only <@W222>")
    busy_turns.assert_still_running(turn)

    assert stack.send_event(agent_session_stopped(thread_ts=turn.key.thread_ts)).status_code == 200
    busy_turns.assert_stopped(turn)
