"""Isolation: another person, or the same ids in another workspace, cannot see or steer a session.

A matrix of cancel / resume / approve, sent as `/agent` commands with a thread link and as button
clicks on the session's own cards, by (a) someone who neither started the thread nor operates,
and (b) a person of a second workspace. Every attempt is refused and the session is unchanged.
"""

from __future__ import annotations

import pytest

from gateway.render.buttons import ButtonValue
from gateway.sandbox.stack import Stack
from jobs.control import cancel_requested_by
from jobs.keys import SessionKey
from jobs.session.approvals import Approval, ApprovalStore
from jobs.session.notices import ApprovalRequestNotice
from jobs.session.state import state_of
from jobs.session.store import SessionStore
from tests.e2e.sessions import link, open_session, post, put_in_state, response_url
from tests.slack_events import block_action, command
from tests.thread_view import responses

OUTSIDER = {"user": "W999", "team": "T111"}
OTHER_WORKSPACE = {"user": "W222", "team": "T222"}  # the owner's id, but in someone else's workspace
START_STATE = {"cancel": "running", "resume": "interrupted", "approve": "awaiting_approval"}


def prepare(redis, key: SessionKey, action: str) -> None:
    put_in_state(redis, key, START_STATE[action])  # type: ignore[arg-type]
    if action == "approve":
        approval = Approval(approval_id="s1:c1", tool_call_id="c1", tool_name="shell", summary="rm -rf build",
                            step_uuid="s1")  # fmt: skip
        ApprovalStore(SessionStore(redis, key)).park([approval])
        post(redis, key, ApprovalRequestNotice(approval_id="s1:c1", tool_call_id="c1", tool_name="shell",
                                               summary="rm -rf build", details="rm -rf build"))  # fmt: skip


def unchanged(redis, key: SessionKey, action: str) -> bool:
    store = SessionStore(redis, key)
    approvals = ApprovalStore(store).states()
    return (
        state_of(store) == START_STATE[action]
        and cancel_requested_by(redis, key) is None
        and store.meta.read().resume_requested is None
        and all(value == "pending" for value in approvals.values())
    )


@pytest.mark.parametrize("who", ["outsider", "other workspace"])
@pytest.mark.parametrize("action", ["cancel", "resume"])
def test_commands_from_the_wrong_person_or_workspace_change_nothing(stack: Stack, fake_slack, fake_llm, redis,
                                                                     action, who):  # fmt: skip
    key = open_session(stack, fake_slack, fake_llm)
    prepare(redis, key, action)
    actor = OUTSIDER if who == "outsider" else OTHER_WORKSPACE
    words = f"{action} {link(fake_slack, key)}"
    fields = command(words, user=actor["user"], team=actor["team"], response_url=response_url(fake_slack))
    response = stack.send_command(fields)
    assert response.status_code == 200
    answer = response.json()["text"]
    assert "Only <@" in answer or "no session" in answer.lower() or "There is no" in answer
    assert unchanged(redis, key, action)


@pytest.mark.parametrize("who", ["outsider", "other workspace"])
@pytest.mark.parametrize(
    ("action", "action_id"), [("cancel", "tl_stop"), ("resume", "tl_resume"), ("approve", "tl_approve")]
)
def test_clicks_from_the_wrong_person_or_workspace_change_nothing(stack: Stack, fake_slack, fake_llm, redis,
                                                                  action, action_id, who):  # fmt: skip
    key = open_session(stack, fake_slack, fake_llm)
    prepare(redis, key, action)
    actor = OUTSIDER if who == "outsider" else OTHER_WORKSPACE
    value = ButtonValue(key, approval_id="s1:c1" if action == "approve" else None).encode()
    before = len(responses(fake_slack))
    payload = block_action(action_id, value, user=actor["user"], team=actor["team"], message_ts=key.thread_ts,
                           response_url=response_url(fake_slack))  # fmt: skip
    assert stack.send_interaction(payload).status_code == 200
    answers = responses(fake_slack)[before:]
    assert answers and answers[0]["response_type"] == "ephemeral"
    assert unchanged(redis, key, action)


def test_status_from_another_workspace_reveals_nothing(stack: Stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    fields = command(
        f"status {link(fake_slack, key)}", user="W222", team="T222", response_url=response_url(fake_slack)
    )
    answer = stack.send_command(fields).json()["text"]
    assert key.thread_ts not in answer.replace(link(fake_slack, key), "")
    assert "started" not in answer and "idle" not in answer.lower()
