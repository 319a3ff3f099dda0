import asyncio

import pytest

from agent.tools import CancelSignal, texts
from agent.tools.policy import (
    Allow,
    ApprovalRequest,
    Approved,
    Ask,
    AskForApproval,
    Cancelled,
    Deny,
    DisabledTools,
    Rejected,
)
from tests.agent.tools.helpers import DEADLINE_S, ScriptedTool, call, collect, executor_with, run_one

pytestmark = pytest.mark.anyio


class FixedPolicy:
    def __init__(self, decision):
        self.decision = decision

    def decide(self, tool, arguments, tool_call_id):
        return self.decision


class RecordingApprover:
    def __init__(self, answer):
        self.answer = answer
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request):
        self.requests.append(request)
        return self.answer


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        (Deny(), 'Tool "t" was denied by permission policy.'),
        (Deny(by="rule"), 'Tool "t" was denied by permission rule.'),
        (Deny(by="rule", reason="no network"), 'Tool "t" was denied by permission rule. Reason: no network'),
    ],
)
async def test_denials_use_the_exact_texts_and_do_not_run(decision, expected, tmp_path):
    tool = ScriptedTool("t")
    result = await run_one(
        executor_with(tool, workspace=tmp_path, policy=FixedPolicy(decision)), call("c", "t")
    )
    assert (result.output, result.is_error, tool.runs) == (expected, True, 0)


@pytest.mark.parametrize(
    ("answer", "expected", "runs"),
    [
        (Approved(), "t result", 1),
        (Rejected(), 'Tool "t" was not run because the user rejected the approval request.', 0),
        (
            Rejected("use the staging host"),
            'Tool "t" was not run because the user rejected the approval request.'
            " Reason: use the staging host",
            0,
        ),
        (Cancelled(), 'Tool "t" was not run because the approval request was cancelled.', 0),
    ],
)
async def test_ask_goes_to_the_approver(answer, expected, runs, tmp_path):
    tool = ScriptedTool("t")
    approver = RecordingApprover(answer)
    executor = executor_with(tool, workspace=tmp_path, policy=FixedPolicy(Ask("why")), approver=approver)
    result = await run_one(executor, call("c", "t", {"x": 1}))
    assert (result.output, tool.runs) == (expected, runs)
    (request,) = approver.requests
    assert (request.tool_call_id, request.tool_name, request.reason) == ("c", "t", "why")
    assert request.arguments.model_dump() == {"x": 1}


async def test_ask_without_an_approver_is_a_cancelled_request(tmp_path):
    tool = ScriptedTool("t")
    result = await run_one(executor_with(tool, workspace=tmp_path, policy=FixedPolicy(Ask())), call("c", "t"))
    assert (result.output, tool.runs) == (texts.approval_cancelled("t"), 0)


async def test_a_cancel_while_waiting_for_approval_aborts_the_call(tmp_path):
    asked = asyncio.Event()

    async def never_answers(request):
        asked.set()
        await asyncio.Event().wait()

    tool = ScriptedTool("t")
    signal = CancelSignal()
    executor = executor_with(tool, workspace=tmp_path, policy=FixedPolicy(Ask()), approver=never_answers)
    batch = asyncio.ensure_future(collect(executor, [call("c", "t")], signal))
    await asyncio.wait_for(asked.wait(), DEADLINE_S)
    signal.cancel("user_cancelled")
    (item,) = await batch
    assert item.result.output == texts.aborted("t", "user_cancelled")
    assert tool.runs == 0


async def test_a_failing_approver_counts_as_a_cancelled_request(tmp_path):
    async def broken(request):
        raise RuntimeError("slack down")

    tool = ScriptedTool("t")
    executor = executor_with(tool, workspace=tmp_path, policy=FixedPolicy(Ask()), approver=broken)
    assert (await run_one(executor, call("c", "t"))).output == texts.approval_cancelled("t")


async def test_the_guard_vetoes_before_validation(tmp_path):
    tool = ScriptedTool("t")
    executor = executor_with(tool, workspace=tmp_path, guard=DisabledTools(frozenset({"t"})))
    result = await run_one(executor, call("c", "t", "{broken json"))
    assert (result.output, tool.runs) == ('Tool "t" is disabled in this session.', 0)


async def test_an_unavailable_tool_says_why(tmp_path):
    class Offline(ScriptedTool):
        def unavailable_reason(self):
            return "The web is not reachable from this worker."

    result = await run_one(executor_with(Offline("web"), workspace=tmp_path), call("c", "web"))
    assert result.output == "The web is not reachable from this worker."


def test_tools_that_declare_approval_ask_whatever_the_names_say():
    from agent.tools.builtin import HttpGet, ReadFile, Shell

    for named in (frozenset(), frozenset({"Shell", "bash"}), frozenset({"read_file"})):
        policy = AskForApproval(named=named)
        assert isinstance(policy.decide(Shell(), None, "c"), Ask), named
        assert isinstance(policy.decide(HttpGet(), None, "c"), Ask), named
    assert isinstance(AskForApproval().decide(ReadFile(), None, "c"), Allow)


def test_named_tools_ask_on_top_and_only_an_explicit_waiver_lets_a_declared_tool_run():
    from agent.tools.builtin import HttpGet, ReadFile, Shell

    policy = AskForApproval(named=frozenset({"read_file"}), waived=frozenset({"shell"}))
    assert isinstance(policy.decide(ReadFile(), None, "c"), Ask)
    assert isinstance(policy.decide(Shell(), None, "c"), Allow)
    assert isinstance(policy.decide(HttpGet(), None, "c"), Ask)
    assert isinstance(
        AskForApproval(named=frozenset({"shell"}), waived=frozenset({"shell"})).decide(Shell(), None, "c"),
        Ask,
    )
