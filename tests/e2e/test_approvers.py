"""Approving is a privilege of its own: asking for a call never means approving it oneself.

Real turns through the web process and RQ workers; the clicks are signed as Slack signs them.
"""

from __future__ import annotations

from agent.testing import calls, text
from tests.e2e.test_live_turns import card_with, click, start, state
from tests.polling import wait_for
from tests.sandboxing import workspace_of
from tests.thread_view import thread_texts

ASKING = {"APPROVAL_WAIVED_TOOLS": ""}  # shell asks, as in production
NOBODY = "Nobody can approve calls here yet: an admin sets SLACK_APPROVERS (user or user-group ids)."
APPROVERS_ONLY = "Only an approver (SLACK_APPROVERS) can approve or deny this call."


def parked_shell(stack, fake_slack, fake_llm, redis, words: str = "deploy"):
    fake_llm.script(calls(("c1", "shell", {"command": "echo yes > ran"})), text("done"))
    key = start(stack, fake_slack, words)
    card = card_with(fake_slack, key, "Approve")
    wait_for(lambda: state(redis, key) == "awaiting_approval", what="the parked turn")
    return key, card


def test_the_initiator_cannot_approve_their_own_call_when_nobody_is_an_approver(
    make_stack, fake_slack, fake_llm, redis, tmp_path
):
    stack = make_stack(**ASKING, SLACK_APPROVERS="", SLACK_OPERATORS="", SLACK_ALLOWED_USERS="")
    key, card = parked_shell(stack, fake_slack, fake_llm, redis)
    assert click(stack, fake_slack, card, "Approve") == NOBODY
    assert click(stack, fake_slack, card, "Deny") == NOBODY
    assert state(redis, key) == "awaiting_approval"
    assert not (workspace_of(tmp_path, key) / "ran").exists() and len(fake_llm.requests) == 1


def test_only_an_approver_approves_and_the_call_then_runs(make_stack, fake_slack, fake_llm, redis, tmp_path):
    stack = make_stack(**ASKING, SLACK_APPROVERS="W999")
    key, card = parked_shell(stack, fake_slack, fake_llm, redis)
    assert click(stack, fake_slack, card, "Approve") == APPROVERS_ONLY  # W222 asked; W222 may not approve
    assert click(stack, fake_slack, card, "Approve", user="W333") == APPROVERS_ONLY
    assert state(redis, key) == "awaiting_approval"

    assert click(stack, fake_slack, card, "Approve", user="W999") == "Approved `shell`."
    wait_for(lambda: "done" in thread_texts(fake_slack, "C111", key.thread_ts), what="the answer")
    assert (workspace_of(tmp_path, key) / "ran").read_text() == "yes\n"


def test_operators_approve_when_no_approver_is_named(make_stack, fake_slack, fake_llm, redis, tmp_path):
    stack = make_stack(**ASKING, SLACK_APPROVERS="", SLACK_OPERATORS="W777")
    key, card = parked_shell(stack, fake_slack, fake_llm, redis)
    assert click(stack, fake_slack, card, "Approve") == APPROVERS_ONLY
    assert click(stack, fake_slack, card, "Approve", user="W777") == "Approved `shell`."
    wait_for(lambda: (workspace_of(tmp_path, key) / "ran").exists(), what="the approved call to run")


def test_a_closed_group_without_approvers_approves_its_own_calls(
    make_stack, fake_slack, fake_llm, redis, tmp_path
):
    stack = make_stack(**ASKING, SLACK_APPROVERS="", SLACK_ALLOWED_USERS="W222,W333")
    key, card = parked_shell(stack, fake_slack, fake_llm, redis)
    assert click(stack, fake_slack, card, "Approve", user="W333").startswith("Only <@W222>")
    assert click(stack, fake_slack, card, "Approve") == "Approved `shell`."
    wait_for(lambda: (workspace_of(tmp_path, key) / "ran").exists(), what="the approved call to run")


def test_web_warns_at_start_when_nobody_may_approve(make_stack, fake_slack, fake_llm):
    stack = make_stack(**ASKING, SLACK_APPROVERS="", SLACK_OPERATORS="", SLACK_ALLOWED_USERS="")
    log = stack.logs / "web.log"
    wait_for(lambda: "nobody may approve" in log.read_text(), what="the warning in web's log")
    assert "WARNING" in next(line for line in log.read_text().splitlines() if "nobody may approve" in line)
