"""Sub-agent keys never reach Slack, and a sub-agent's approval is decided from its root's thread."""

from __future__ import annotations

import pytest

from agent.delegation.launcher import ChildSpec
from jobs.control import decide_approval
from jobs.delegation.child_approvals import forward_approvals
from jobs.delegation.children import ChildInfo, agent_id_for, create_child
from jobs.keys import SessionKey
from jobs.queues import SLACK_QUEUE, queue, schedule_delivery
from jobs.session.approvals import Approval, ApprovalStore
from jobs.session.notices import ApprovalDecidedNotice, ApprovalRequestNotice
from jobs.session.state import set_state
from jobs.session.store import SessionStore

ROOT = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")


def child_of(redis, parent: SessionKey, call_id: str) -> SessionStore:
    key = parent.subagent(agent_id_for(call_id))
    info = ChildInfo(
        parent=parent, root=ROOT, depth=1, agent_id=agent_id_for(call_id), call_id=call_id,
        mode="foreground", description="deploy helper", profile="coder",
    )  # fmt: skip
    return create_child(
        redis, info, ChildSpec(prompt="go", description="deploy helper", profile="coder"), key
    )


@pytest.mark.parametrize(("call_id", "agent_id"), [("call_1", "call_1"), ("tool:ab/c d", "tool_ab_c_d")])
def test_agent_ids_are_key_safe_and_mark_the_key(call_id: str, agent_id: str):
    assert agent_id_for(call_id) == agent_id
    key = ROOT.subagent(agent_id_for(call_id))
    assert key.is_subagent and not ROOT.is_subagent
    assert SessionKey.parse(str(key)) == key


def test_nothing_is_delivered_for_a_sub_agent(redis):
    assert not schedule_delivery(redis, ROOT.subagent("a1"))
    assert queue(redis, SLACK_QUEUE).count == 0
    assert schedule_delivery(redis, ROOT)


def test_a_sub_agents_approval_shows_in_the_root_thread_and_is_decided_there(redis):
    child = child_of(redis, ROOT, "a1")
    approval = Approval(
        approval_id="t9-s1:c1", tool_call_id="c1", tool_name="shell", summary="command: make deploy",
        reason='"shell" needs a person\'s approval in this workspace.', step_uuid="t9-s1", turn_id="t9",
    )  # fmt: skip
    ApprovalStore(child).park([approval])
    set_state(child, "awaiting_approval")
    forward_approvals(child)

    root = SessionStore(redis, ROOT)
    (shown,) = [n for _, n in root.notices() if isinstance(n, ApprovalRequestNotice)]
    assert (shown.approval_id, shown.tool_name) == ("t9-s1:c1", "shell")
    assert shown.reason.startswith("Asked by the sub-agent “deploy helper”.")

    result = decide_approval(redis, ROOT, "t9-s1:c1", "approved", by="W1", turn_timeout_s=60)
    assert result.ok
    assert ApprovalStore(child).state("t9-s1:c1") == "approved"
    decided = [n for _, n in root.notices() if isinstance(n, ApprovalDecidedNotice)]
    assert [(n.approval_id, n.decision, n.by) for n in decided] == [("t9-s1:c1", "approved", "W1")]
    assert child.meta.read().state == "queued"  # the sub-agent's continuation is on its way
    again = decide_approval(redis, ROOT, "t9-s1:c1", "denied", by="W1", turn_timeout_s=60)
    assert not again.ok
