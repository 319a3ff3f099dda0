"""A sub-agent runs under its parent's approval rules: its request is decided from the root thread."""

from __future__ import annotations

from pathlib import Path

from agent.testing import FakeLLM, calls, text
from jobs.control import decide_approval
from jobs.session.notices import ApprovalRequestNotice
from tests.e2e.agents import Agents, start_stack, state, tool_results, wait_for_answer
from tests.e2e.turns import Session
from tests.polling import wait_for
from tests.sandboxing import workspace_of


def test_a_sub_agents_shell_call_waits_for_a_person_in_the_root_thread(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm: FakeLLM
):
    agents = Agents()
    agents.add(
        "APPROVAL-ROOT",
        calls(("a1", "Agent", {"prompt": "DEPLOYER: deploy", "description": "deployer"})),
        text("root: deployed"),
    )
    deploy = calls(("sh", "shell", {"command": "touch deployed; echo ok"}))
    agents.add("DEPLOYER", deploy, text("deploy ran"))
    fake_llm.default = agents
    asking = {"APPROVAL_WAIVED_TOOLS": ""}  # shell asks, as it declares
    stack = start_stack(tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=1, **asking)
    try:
        session = Session(redis, fake_slack, "APPROVAL-ROOT")
        marker = workspace_of(tmp_path, session.key) / "deployed"  # a sub-agent works in its root's workspace
        (request,) = wait_for(lambda: session.notices("approval_request"), timeout=30, what="the request")
        assert isinstance(request, ApprovalRequestNotice) and request.tool_name == "shell"
        assert request.details == "touch deployed; echo ok"  # the root's card shows the whole call
        assert request.reason.startswith("Asked by the sub-agent “deployer”.")
        child = session.key.subagent("a1")
        assert state(redis, child) == "awaiting_approval" and session.state() == "awaiting_agents"
        assert not marker.exists()

        approve = decide_approval(
            redis, session.key, request.approval_id, "approved", by="W222", turn_timeout_s=60
        )
        assert approve.ok
        wait_for_answer(session, "root: deployed")
        assert marker.exists()
        assert tool_results(agents.of("APPROVAL-ROOT")[1]) == {"a1": "deploy ran"}
        assert [n.decision for n in session.notices("approval_decided")] == ["approved"]
    finally:
        stack.stop()
