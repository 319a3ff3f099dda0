"""Commands and buttons respect the channel: `/agent <verb> <link>` and Inspect act for the
linked channel's members (conversations.members, cached), the session's owner and operators.

Signed requests through the real web process and a worker. A refusal is the caller's ephemeral
answer, says why, reveals nothing of the session and changes nothing.
"""

from __future__ import annotations

from agent.testing import FakeLLM
from agent.wire import AppendLoopEvent, ToolCallEvent
from gateway.sandbox.fake_slack import FakeSlack
from jobs.keys import SessionKey, inbox_key
from jobs.session.notices import UnknownResultNotice
from jobs.session.state import state_of
from jobs.session.store import SessionStore
from tests.e2e.sessions import link, open_session, post, put_in_state
from tests.e2e.test_buttons import click, delivered
from tests.e2e.test_skill_commands import add_skills, run
from tests.rq_state import waiting

PRIVATE = "C0PRIV"
NOT_A_MEMBER = "you are not in"  # part of the refusal


def private_session(stack, fake_slack: FakeSlack, fake_llm: FakeLLM, tmp_path) -> SessionKey:
    fake_slack.set_members(PRIVATE, ["W222", "W444"])
    key = open_session(stack, fake_slack, fake_llm, channel=PRIVATE)
    add_skills(tmp_path / "workspaces", key)
    return key


def snapshot(redis, key: SessionKey) -> tuple[str, int, int]:
    store = SessionStore(redis, key)
    return state_of(store), len(store.read_wire()), redis.llen(inbox_key(key))


def test_a_non_members_commands_on_a_private_thread_are_refused_and_change_nothing(
    stack, fake_slack, fake_llm, redis, tmp_path
):
    key = private_session(stack, fake_slack, fake_llm, tmp_path)
    before = snapshot(redis, key)
    there = link(fake_slack, key)
    for words in (f"skill release {there} v1", f"status {there}", f"skills {there}"):
        answer = run(stack, fake_slack, words, user="W333")
        assert NOT_A_MEMBER in answer, words
        assert "W222" not in answer and "idle" not in answer and "release" not in answer, words
    assert snapshot(redis, key) == before
    assert len(fake_llm.requests) == 1 and waiting(redis) == 0

    nowhere = link(fake_slack, SessionKey(team="T111", channel=PRIVATE, thread_ts="1700000000.000100"))
    assert NOT_A_MEMBER in run(stack, fake_slack, f"status {nowhere}", user="W333")  # no session: same answer


def test_a_member_may_use_them(stack, fake_slack, fake_llm, redis, tmp_path):
    key = private_session(stack, fake_slack, fake_llm, tmp_path)
    there = link(fake_slack, key)
    status = run(stack, fake_slack, f"status {there}", user="W444")
    assert status.startswith("State: idle") and "started by <@W222>" in status
    assert "• `release`: cut a release" in run(stack, fake_slack, f"skills {there}", user="W444")
    answer = run(stack, fake_slack, f"skill release {there} v1", user="W444")
    assert answer == 'Loaded the skill "release". Started a turn with it.'


def test_the_owner_and_operators_need_not_be_members(make_stack, fake_slack, fake_llm, redis, tmp_path):
    stack = make_stack(SLACK_OPERATORS="W999")
    key = private_session(stack, fake_slack, fake_llm, tmp_path)
    fake_slack.set_members(PRIVATE, ["W444"])  # the owner left the channel
    for user in ("W222", "W999"):
        assert run(stack, fake_slack, f"status {link(fake_slack, key)}", user=user).startswith("State: idle")


def test_membership_is_read_page_by_page_and_cached(stack, fake_slack, fake_llm, redis, tmp_path):
    key = private_session(stack, fake_slack, fake_llm, tmp_path)
    fake_slack.set_members(PRIVATE, ["W222", *(f"W{n:05d}" for n in range(1500)), "W444"])
    for cached in redis.keys("tl:members:*"):  # W444 joined since the last look
        redis.delete(cached)
    for _ in range(2):
        assert run(stack, fake_slack, f"status {link(fake_slack, key)}", user="W444").startswith(
            "State: idle"
        )
    pages = fake_slack.calls("conversations.members")
    assert len(pages) == 2 and pages[1].args.get("cursor")


def test_inspect_needs_the_same(stack, fake_slack, fake_llm, redis, tmp_path):
    key = private_session(stack, fake_slack, fake_llm, tmp_path)
    arguments = {"command": "deploy --token-file /etc/secret " + "x" * 50}
    SessionStore(redis, key).append(
        AppendLoopEvent(
            event=ToolCallEvent(step_uuid="s1", tool_call_id="call_7", name="shell", args=arguments)
        )
    )
    put_in_state(redis, key, "interrupted")
    post(redis, key, UnknownResultNotice(tool_call_id="call_7", tool_name="shell", summary="deploy"))
    notice = delivered(fake_slack, key, 2)[-1]

    refused = click(stack, fake_slack, notice, "Inspect", user="W333")
    assert NOT_A_MEMBER in refused and "/etc/secret" not in refused
    assert "/etc/secret" in click(stack, fake_slack, notice, "Inspect", user="W444")
