"""Slack controls on real turns of the agent loop: steering, Stop, approvals, a crash, a 429 storm."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from agent.testing import FakeLLM, calls, text
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack, Fault
from gateway.sandbox.stack import Stack
from jobs.keys import SessionKey
from jobs.session.state import state_of
from jobs.session.store import SessionStore
from tests.e2e.sessions import response_url
from tests.polling import wait_for
from tests.sandboxing import host_pids, sleep_marker, workspace_of
from tests.slack_events import block_action, mention, message
from tests.thread_view import bot_messages, buttons, responses, shown, thread_texts
from tests.unattended import UNATTENDED

DENIED = 'Tool "shell" was not run because the user rejected the approval request.'  # context-core.md §4.5


def start(stack: Stack, fake_slack: FakeSlack, words: str, user: str = "W222") -> SessionKey:
    root = fake_slack.add_user_message("C111", f"<@{BOT_USER_ID}> {words}", user=user)
    assert stack.send_event(mention(words, ts=root["ts"], user=user)).status_code == 200
    return SessionKey(team="T111", channel="C111", thread_ts=root["ts"])


def card_with(fake_slack: FakeSlack, key: SessionKey, label: str) -> dict:
    return wait_for(
        lambda: next(
            (m for m in bot_messages(fake_slack, key.channel, key.thread_ts) if label in buttons(m)), None
        ),
        what=f"a message with {label}",
    )


def click(stack: Stack, fake_slack: FakeSlack, message_: dict, label: str, user: str = "W222") -> str:
    action = {"Stop": "tl_stop", "Resume": "tl_resume", "Approve": "tl_approve", "Deny": "tl_deny"}[label]
    before = len(responses(fake_slack))
    payload = block_action(
        action,
        buttons(message_)[label],
        user=user,
        message_ts=message_["ts"],
        response_url=response_url(fake_slack),
    )
    assert stack.send_interaction(payload).status_code == 200
    return responses(fake_slack)[before]["text"]


def tool_results(request: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def state(redis, key: SessionKey) -> str:
    return state_of(SessionStore(redis, key))


def test_a_follow_up_steers_the_running_turn(make_stack, fake_slack, fake_llm: FakeLLM, redis, tmp_path):
    stack = make_stack(workers=2)  # one runs the turn, the other delivers its card meanwhile
    fake_llm.script(
        calls(("c1", "shell", {"command": "while [ ! -e go ]; do sleep 0.05; done; echo built"})),
        text("built, and lint is clean too"),
    )
    key = start(stack, fake_slack, "build it")
    gate = workspace_of(tmp_path, key) / "go"
    card = card_with(fake_slack, key, "Stop")
    assert "`shell`" in shown(card) and "running" in shown(card)

    follow = fake_slack.add_user_message("C111", "also run lint", user="W222", thread_ts=key.thread_ts)
    stack.send_event(message("also run lint", ts=follow["ts"], thread_ts=key.thread_ts))
    gate.touch()
    wait_for(
        lambda: "built, and lint is clean too" in thread_texts(fake_slack, "C111", key.thread_ts),
        what="answer",
    )

    steered = fake_llm.accepted()[-1]["messages"]
    assert [m["role"] for m in steered[-2:]] == ["tool", "user"]
    assert steered[-1]["content"] == "<@W222>: also run lint"
    assert len(fake_llm.accepted()) == 2  # one turn: the follow-up joined it at the next step
    cards = [m for m in bot_messages(fake_slack, "C111", key.thread_ts) if "Done" in shown(m)]
    assert len(cards) == 1 and cards[0]["ts"] == card["ts"] and buttons(cards[0]) == {}


def test_the_stop_button_stops_a_running_shell_turn(make_stack, fake_slack, fake_llm, redis, tmp_path):
    stack = make_stack(workers=2)
    sleep = sleep_marker()
    fake_llm.script(calls(("c1", "shell", {"command": f"sleep {sleep}", "timeout": 120})))
    key = start(stack, fake_slack, "long build")
    card = card_with(fake_slack, key, "Stop")
    wait_for(lambda: host_pids(sleep), what="the shell to start")

    assert click(stack, fake_slack, card, "Stop", user="W333").startswith("Only <@W222>")
    assert click(stack, fake_slack, card, "Stop").startswith("Stopping the running turn")
    wait_for(lambda: state(redis, key) == "cancelled", what="the turn to stop")
    wait_for(lambda: not host_pids(sleep), timeout=15, what="the shell to be gone")
    stopped = card_with(fake_slack, key, "Resume")
    assert shown(stopped).endswith("Stopped by <@W222>. `!resume` continues.")
    wait_for(lambda: "Stopped" in shown(fake_slack.thread("C111", key.thread_ts)[1]), what="the final card")
    assert buttons(fake_slack.thread("C111", key.thread_ts)[1]) == {}
    assert len(fake_llm.requests) == 1
    wait_for(lambda: fake_slack.state.statuses[-1]["status"] == "", what="the status cleared")


def test_an_approval_click_runs_the_parked_shell_call(make_stack, fake_slack, fake_llm, redis, tmp_path):
    stack = make_stack(APPROVAL_WAIVED_TOOLS="", workers=2)
    fake_llm.script(calls(("c1", "shell", {"command": "echo yes > deployed"})), text("deployed"))
    key = start(stack, fake_slack, "deploy")
    marker = workspace_of(tmp_path, key) / "deployed"
    card = card_with(fake_slack, key, "Approve")
    assert "echo yes &gt; deployed" in shown(card)
    wait_for(lambda: state(redis, key) == "awaiting_approval", what="the parked turn")
    assert not marker.exists()

    assert click(stack, fake_slack, card, "Approve", user="W333").startswith("Only an approver")
    assert click(stack, fake_slack, card, "Approve") == "Approved `shell`."
    wait_for(lambda: "deployed" in thread_texts(fake_slack, "C111", key.thread_ts), what="the answer")
    assert marker.read_text() == "yes\n"
    assert "exit_code: 0" in tool_results(fake_llm.accepted()[-1])["c1"]
    assert click(stack, fake_slack, card, "Approve") == "That request was already decided."
    decided = next(m for m in fake_slack.thread("C111", key.thread_ts) if m["ts"] == card["ts"])
    assert "Approved by <@W222>" in shown(decided) and buttons(decided) == {}
    assert len(fake_llm.accepted()) == 2


def test_a_deny_click_gives_the_model_the_spec_denial_and_runs_nothing(
    make_stack, fake_slack, fake_llm, redis, tmp_path
):
    stack = make_stack(APPROVAL_WAIVED_TOOLS="")
    fake_llm.script(calls(("c1", "shell", {"command": "touch dropped"})), text("ok, I will not"))
    key = start(stack, fake_slack, "drop the table")
    marker = workspace_of(tmp_path, key) / "dropped"
    card = card_with(fake_slack, key, "Deny")
    assert click(stack, fake_slack, card, "Deny") == "Denied `shell`."
    wait_for(lambda: "ok, I will not" in thread_texts(fake_slack, "C111", key.thread_ts), what="the answer")
    assert tool_results(fake_llm.accepted()[-1])["c1"].endswith(DENIED)
    assert not marker.exists()


def test_a_crashed_tool_gets_an_unknown_result_notice_whose_buttons_work(
    tmp_path: Path, redis, redis_url, fake_slack, fake_llm
):
    sleep = sleep_marker()
    stack = Stack(
        tmp_path,
        redis_url,
        fake_slack.api_url,
        fake_llm.base_url,
        **UNATTENDED,
        LEASE_TTL_SECONDS="3",
        JANITOR_INTERVAL_SECONDS="1",
    ).start(workers=2)
    try:
        command = f"echo ran >> ran; sleep {sleep}"
        fake_llm.script(calls(("c1", "shell", {"command": command, "timeout": 120})))
        key = start(stack, fake_slack, "deploy it")
        marker = workspace_of(tmp_path, key) / "ran"
        wait_for(lambda: host_pids(sleep), what="the command to start")
        busy = next(n for n in ("worker0", "worker1") if _runs_the_shell(stack, n, sleep))
        stack.kill(busy)

        notice = wait_for(
            lambda: next(
                (m for m in bot_messages(fake_slack, "C111", key.thread_ts) if "Inspect" in buttons(m)), None
            ),
            timeout=40,
            what="the unknown-result notice",
        )
        said = shown(notice)
        assert "`shell`" in said and "unknown" in said and "Nothing was re-run." in said
        inspected = _click_inspect(stack, fake_slack, notice)
        assert f"sleep {sleep}" in inspected and "c1" in inspected

        fake_llm.script(text("I could not confirm the deploy"))
        assert click(stack, fake_slack, notice, "Resume").startswith("Resumed")
        wait_for(
            lambda: "I could not confirm the deploy" in thread_texts(fake_slack, "C111", key.thread_ts),
            what="answer",
        )
        assert len(marker.read_text().split()) == 1  # nothing was re-run
    finally:
        for pid in host_pids(sleep):
            os.kill(pid, signal.SIGKILL)
        stack.stop()


def _runs_the_shell(stack: Stack, name: str, sleep: str) -> bool:
    from agent.tools.sandbox import descendants

    return bool(set(host_pids(sleep)) & set(descendants(stack.processes[name].pid)))


def _click_inspect(stack: Stack, fake_slack: FakeSlack, notice: dict) -> str:
    before = len(responses(fake_slack))
    payload = block_action(
        "tl_inspect",
        buttons(notice)["Inspect"],
        message_ts=notice["ts"],
        response_url=response_url(fake_slack),
    )
    stack.send_interaction(payload)
    import json

    return json.dumps(responses(fake_slack)[before].get("blocks"))


def test_a_429_storm_on_a_real_turn_posts_the_final_answer_exactly_once(stack, fake_slack, fake_llm):
    fake_llm.script(text("the final answer"))
    fake_slack.inject(Fault("chat.postMessage", count=8, status=429, retry_after=1))
    key = start(stack, fake_slack, "answer me")
    wait_for(lambda: thread_texts(fake_slack, "C111", key.thread_ts), timeout=40, what="the answer")
    follow = fake_slack.add_user_message("C111", "thanks", user="W222", thread_ts=key.thread_ts)
    fake_llm.script(text("you are welcome"))
    stack.send_event(message("thanks", ts=follow["ts"], thread_ts=key.thread_ts))
    wait_for(lambda: "you are welcome" in thread_texts(fake_slack, "C111", key.thread_ts), what="a barrier")
    assert thread_texts(fake_slack, "C111", key.thread_ts) == ["the final answer", "you are welcome"]
