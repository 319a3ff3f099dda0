"""Pull requests from a thread, end to end: real web and worker processes, the fake Slack, the fake
model and a fake GitHub over HTTP (git through the real `git http-backend`, the pulls API).

The model calls open_pull_request; a person approves it from a card showing where it goes and
what changed; the worker pushes the thread's branch and opens the pull request; the thread gets
one card for it. A follow-up in the thread pushes to the same branch and edits that card: one
thread, one pull request. The forge's token never reaches the model, the thread or the logs.
"""

from __future__ import annotations

import json
import threading

from agent.fold import INTERRUPTED_TOOL_RESULT
from agent.testing import calls, text
from gateway.sandbox.fake_forge import FakeForge
from gateway.sandbox.stack import THREADLINE
from jobs.control import resume
from jobs.janitor import sweep
from jobs.keys import SessionKey
from jobs.session.notices import UnknownResultNotice
from jobs.session.store import SessionStore
from tests.conftest import FORGE_TOKEN
from tests.e2e.test_live_turns import card_with, click, start, state, tool_results
from tests.polling import wait_for
from tests.sandboxing import open_for_the_sandbox
from tests.slack_events import message
from tests.thread_view import bot_messages, shown

CARD_MARK = ":twisted_rightwards_arrows: Pull request"


def forge_settings(forge: FakeForge) -> dict[str, str]:
    repo = {"url": f"{forge.url}/acme/app.git", "forge": "github", "repo": "acme/app", "base": "main"}
    return {
        "CHANNEL_REPOS": json.dumps({"C111": repo}),
        "GITHUB_TOKEN": FORGE_TOKEN,
        "GITHUB_API_URL": forge.api_url,
    }


def pull_request_cards(fake_slack, key: SessionKey) -> list[dict]:  # type: ignore[no-untyped-def]
    return [m for m in bot_messages(fake_slack, key.channel, key.thread_ts) if CARD_MARK in shown(m)]


def approve_the_next_call(stack, fake_slack, redis, key: SessionKey) -> dict:  # type: ignore[no-untyped-def]
    """Wait for an approval card still undecided, and approve it; the card as it asked."""
    card = card_with(fake_slack, key, "Approve")
    wait_for(lambda: state(redis, key) == "awaiting_approval", what="the parked turn")
    click(stack, fake_slack, card, "Approve")
    return card


def test_a_threads_work_becomes_one_pull_request_that_a_follow_up_updates(
    make_stack, fake_slack, fake_llm, redis, forge
):
    stack = make_stack(**forge_settings(forge))
    fake_llm.script(
        calls(("c1", "write_file", {"path": "app.py", "content": "print('fixed')\n"})),
        calls(("c2", "open_pull_request", {"title": "Fix the bug", "body": "It printed bug."})),
        text("Opened it."),
        calls(("c3", "write_file", {"path": "docs.md", "content": "how it works\n"})),
        calls(("c4", "open_pull_request", {"title": "Fix the bug, with docs", "body": "Docs too."})),
        text("Updated it."),
    )
    key = start(stack, fake_slack, "fix the bug and open a pull request")
    branch = f"threadline/c111-{key.thread_ts.replace('.', '')}"

    asked = approve_the_next_call(stack, fake_slack, redis, key)
    wait_for(lambda: state(redis, key) == "idle" and pull_request_cards(fake_slack, key), what="the card")

    assert f"Pushes `{branch}` to acme/app, base `main`; opens a pull request." in shown(asked)
    assert "1 file changed, 1 insertion(+), 1 deletion(-)" in shown(asked)
    [pull] = forge.pulls()
    assert (pull.title, pull.head, pull.base) == ("Fix the bug", branch, "main")
    assert forge.file_at("acme/app", branch, "app.py") == "print('fixed')\n"
    assert tool_results(fake_llm.requests[2])["c2"].startswith(
        f"Opened pull request #1: {forge.url}/acme/app/pull/1"
    )
    [card] = pull_request_cards(fake_slack, key)
    assert f"<{forge.url}/acme/app/pull/1|#1 Fix the bug>" in shown(
        card
    ) and "1 push from this thread" in shown(card)

    reply = fake_slack.add_user_message("C111", "also write the docs", user="W222", thread_ts=key.thread_ts)
    event = message("also write the docs", ts=reply["ts"], thread_ts=key.thread_ts, user="W222")
    assert stack.send_event(event).status_code == 200
    approve_the_next_call(stack, fake_slack, redis, key)
    wait_for(lambda: "2 pushes" in shown(pull_request_cards(fake_slack, key)[0]), what="the card edited")
    wait_for(lambda: state(redis, key) == "idle", what="the follow-up's end")

    [pull] = forge.pulls()
    assert (
        pull.title == "Fix the bug, with docs"
        and forge.file_at("acme/app", branch, "docs.md") == "how it works\n"
    )
    [edited] = pull_request_cards(fake_slack, key)
    assert edited["ts"] == card["ts"] and "#1 Fix the bug, with docs" in shown(edited)
    opened = [c for c in forge.calls() if c.method == "POST" and c.path.endswith("/pulls")]
    assert len(opened) == 1
    everything_said = json.dumps(fake_llm.requests) + json.dumps([c.args for c in fake_slack.calls()])
    logs = stack.log("web") + stack.log("worker0")
    assert FORGE_TOKEN not in everything_said and FORGE_TOKEN not in logs


def test_a_channel_without_a_forge_is_told_so_and_nobody_is_asked(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack()
    fake_llm.script(
        calls(("c1", "write_file", {"path": "x.py", "content": "x\n"})),
        calls(("c2", "open_pull_request", {"title": "t"})),
        text("No forge here."),
    )
    key = start(stack, fake_slack, "open a pull request")
    wait_for(lambda: len(fake_llm.requests) >= 3, what="the model told")

    said = tool_results(fake_llm.requests[2])["c2"]
    assert 'Tool "open_pull_request" failed: this channel has no repository that takes pull' in said
    assert not [m for m in bot_messages(fake_slack, key.channel, key.thread_ts) if "Approve" in str(m)]


def test_a_worker_killed_during_the_push_leaves_it_unknown_and_the_resumed_call_does_not_push_again(
    make_stack, redis, fake_slack, fake_llm, forge
):
    # 6 s, not 3: the turn's start clones the repository, and on a loaded 2-core machine a renewal
    # could miss the 1.5 s a 3 s lease allows (a flake seen in CI); the janitor still finds it in 6 s
    stack = make_stack(**forge_settings(forge), LEASE_TTL_SECONDS="6", JANITOR_INTERVAL_SECONDS="1")
    forge.hold_pushes = threading.Event()
    try:
        fake_llm.script(
            calls(("c1", "write_file", {"path": "app.py", "content": "print('fixed')\n"})),
            calls(("c2", "open_pull_request", {"title": "Fix the bug"})),
        )
        key = start(stack, fake_slack, "fix it and open a pull request")
        branch = f"threadline/c111-{key.thread_ts.replace('.', '')}"
        approve_the_next_call(stack, fake_slack, redis, key)
        wait_for(lambda: forge.held == 1, what="the push on its way")
        stack.kill("worker0")
        forge.hold_pushes.set()  # the forge takes the push whose sender is gone
        wait_for(lambda: forge.head_of("acme/app", branch) is not None, what="the push landed")
        store = SessionStore(redis, key)
        wait_for(lambda: sweep(redis) or state(redis, key) == "interrupted", timeout=40, what="the janitor")
        unknown = [n for _, n in store.notices() if isinstance(n, UnknownResultNotice)]
        assert [(n.tool_call_id, n.tool_name) for n in unknown] == [("c2", "open_pull_request")]
        pushed = forge.head_of("acme/app", branch)

        stack.spawn("worker1", [THREADLINE, "worker"])
        fake_llm.script(calls(("c3", "open_pull_request", {"title": "Fix the bug"})), text("Opened it."))
        assert resume(redis, key, by="W222", turn_timeout_s=600).ok
        approve_the_next_call(stack, fake_slack, redis, key)
        wait_for(lambda: state(redis, key) == "idle", what="the resumed turn")

        results = tool_results(fake_llm.accepted()[-1])
        assert INTERRUPTED_TOOL_RESULT in results["c2"] and results["c3"].startswith("Opened pull request #1")
        assert forge.head_of("acme/app", branch) == pushed and len(forge.pulls()) == 1
        pushes = [c for c in forge.calls() if c.method == "POST" and c.path.endswith("git-receive-pack")]
        assert len(pushes) == 1  # checked on the forge, never pushed again
    finally:
        forge.hold_pushes.set()  # a push still held would keep the forge's handler waiting


REBASE = (
    "git add -A && git -c user.name=Agent -c user.email=agent@example.com commit -qm wip && "
    "git fetch -q .threadline-base.bundle +main:refs/remotes/origin/main && "
    "{ git -c user.name=Agent -c user.email=agent@example.com rebase origin/main >/dev/null 2>&1; "
    "printf 'hello from main and the thread\\n' > README.md && git add README.md && "
    "GIT_EDITOR=true git -c user.name=Agent -c user.email=agent@example.com rebase --continue; } "
    ">/dev/null 2>&1; git log --format=%s -3"
)


def test_a_base_that_moved_is_rebased_onto_in_the_sandbox_and_merged_into_the_branch(
    make_stack, fake_slack, fake_llm, redis, forge, tmp_path
):
    open_for_the_sandbox(tmp_path)
    stack = make_stack(**forge_settings(forge))
    fake_llm.script(
        calls(("c1", "write_file", {"path": "README.md", "content": "hello from the thread\n"})),
        calls(("c2", "open_pull_request", {"title": "Greet", "body": "b"})),
        calls(("c3", "shell", {"command": REBASE, "timeout": 30})),
        calls(("c4", "open_pull_request", {"title": "Greet", "body": "b"})),
        text("Rebased it."),
    )
    key = start(stack, fake_slack, "greet better and open a pull request")
    branch = f"threadline/c111-{key.thread_ts.replace('.', '')}"
    card_with(fake_slack, key, "Approve")
    moved = forge.commit("acme/app", "main", {"README.md": "hello from main\n", "CHANGELOG.md": "v2\n"})
    approve_the_next_call(stack, fake_slack, redis, key)
    wait_for(lambda: len(fake_llm.requests) >= 3, what="the model told of the conflict")
    first_push = forge.head_of("acme/app", branch)
    assert "git fetch .threadline-base.bundle" in tool_results(fake_llm.requests[2])["c2"]
    conflicting = lambda: any("conflicts with" in shown(c) for c in pull_request_cards(fake_slack, key))  # noqa: E731
    wait_for(conflicting, what="the card")

    asked = approve_the_next_call(stack, fake_slack, redis, key)
    wait_for(lambda: state(redis, key) == "idle" and len(fake_llm.requests) >= 5, what="the turn's end")

    rebased = tool_results(fake_llm.requests[3])["c3"]
    assert "wip" in rebased and "change" in rebased  # the thread's commit on top of main's
    assert f"merging main's new head {moved[:12]}" in shown(asked)
    assert tool_results(fake_llm.requests[4])["c4"].startswith("Updated pull request #1")
    head = forge.head_of("acme/app", branch)
    assert forge.git_in("acme/app", "log", "-1", "--format=%P", str(head)).split() == [first_push, moved]
    assert forge.file_at("acme/app", branch, "README.md") == "hello from main and the thread\n"
    wait_for(lambda: "2 pushes" in shown(pull_request_cards(fake_slack, key)[0]), what="the card edited")
    assert "conflicts with" not in shown(pull_request_cards(fake_slack, key)[0])
    assert [p.number for p in forge.pulls()] == [1]
