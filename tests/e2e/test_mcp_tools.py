"""Tools from an MCP server, on real processes: web, an RQ worker, and a server written with the SDK.

The model calls `fixture__<tool>`; the worker reaches the server over streamable HTTP through
http_get's address policy, and everything the batch adapter promises for a built-in tool holds:
approval (asked by default), the schema checked before the server sees a call, a huge result
spilled, a stop that reaches the server as a cancellation, a server that dies mid-call leaving an
unknown outcome, and a secret header that stays out of the thread, the model's view and the logs.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import sysconfig
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.testing import FakeLLM, calls, text
from gateway.sandbox.stack import SOURCE_ROOT, THREADLINE
from jobs.session.store import SessionStore
from tests.e2e.test_live_turns import card_with, click, start, state, tool_results
from tests.listeners import ConnectionCounter
from tests.mcp_fixture import McpFixture
from tests.polling import wait_for
from tests.sandboxing import workspace_of
from tests.slack_events import message
from tests.thread_view import shown, thread_texts

DENIED = 'Tool "fixture__echo" was not run because the user rejected the approval request.'


@pytest.fixture
def server(tmp_path: Path) -> Iterator[McpFixture]:
    running = McpFixture(tmp_path).start()
    yield running
    running.stop()


def servers(server: McpFixture, **entry: object) -> str:
    return json.dumps({"fixture": {"url": server.url, "internal": True, **entry}})


def declared(request: dict) -> dict[str, dict]:
    return {tool["function"]["name"]: tool["function"] for tool in request.get("tools", [])}


def answered(fake_slack, key, words: str) -> None:
    wait_for(
        lambda: any(words in t for t in thread_texts(fake_slack, key.channel, key.thread_ts)), what=words
    )


def test_a_tool_call_is_answered_by_the_server(make_stack, fake_slack, fake_llm: FakeLLM, server):
    stack = make_stack(MCP_SERVERS=servers(server, approval="never"))
    fake_llm.script(calls(("c1", "fixture__echo", {"text": "hello"})), text("the server said hello"))
    key = start(stack, fake_slack, "ask the server")
    answered(fake_slack, key, "the server said hello")

    first, second = fake_llm.accepted()[:2]
    tool = declared(first)["fixture__echo"]
    assert tool["parameters"]["properties"]["text"]["type"] == "string"
    assert tool["description"].startswith("[MCP server fixture] Says the text back.")
    assert tool_results(second)["c1"] == "echo: hello"
    assert [call["text"] for call in server.calls("echo")] == ["hello"]


def test_an_mcp_tool_asks_first_by_default_and_a_denial_reaches_nothing(
    make_stack, fake_slack, fake_llm: FakeLLM, server
):
    stack = make_stack(MCP_SERVERS=servers(server))
    fake_llm.script(calls(("c1", "fixture__echo", {"text": "ship it"})), text("not shipped"))
    key = start(stack, fake_slack, "ship")
    card = card_with(fake_slack, key, "Deny")
    assert "fixture__echo" in shown(card)
    assert click(stack, fake_slack, card, "Deny") == "Denied `fixture__echo`."
    answered(fake_slack, key, "not shipped")
    assert tool_results(fake_llm.accepted()[-1])["c1"].endswith(DENIED)
    assert server.calls("echo") == []


def test_arguments_the_schema_refuses_never_reach_the_server_and_a_huge_result_is_spilled(
    make_stack, fake_slack, fake_llm: FakeLLM, server, tmp_path: Path
):
    stack = make_stack(MCP_SERVERS=servers(server, approval="never"))
    fake_llm.script(
        calls(("c1", "fixture__add", {"a": "two", "b": 2}), ("c2", "fixture__huge", {})), text("done")
    )
    key = start(stack, fake_slack, "add and read")
    answered(fake_slack, key, "done")

    results = tool_results(fake_llm.accepted()[1])
    assert "fixture__add" in results["c1"] and "/a" in results["c1"]
    assert server.calls("add") == []
    assert "the full output was saved to a file" in results["c2"]
    saved = results["c2"].split("output_path: ")[1].splitlines()[0]
    spilled = (workspace_of(tmp_path, key) / saved).read_text()
    assert "line 009999 of the huge result" in spilled and len(results["c2"]) < len(spilled)


def test_a_schema_pattern_that_backtracks_without_end_refuses_the_call_and_holds_no_turn(
    make_stack, fake_slack, fake_llm: FakeLLM, server
):
    stack = make_stack(MCP_SERVERS=servers(server, approval="never"))
    endless = "a" * 64 + "!"  # matched by backtracking, 2^64 ways to fail
    fake_llm.script(
        calls(("c1", "fixture__find", {"code": endless}), ("c2", "fixture__echo", {"text": "still here"})),
        text("refused, and went on"),
    )
    key = start(stack, fake_slack, "find it")
    answered(fake_slack, key, "refused, and went on")

    results = tool_results(fake_llm.accepted()[1])
    assert "/code must match pattern" in results["c1"] and "could not be checked in time" in results["c1"]
    assert results["c2"] == "echo: still here"
    assert server.calls("find") == []


def test_the_stop_button_stops_the_turn_and_cancels_the_call_on_the_server(
    make_stack, fake_slack, fake_llm: FakeLLM, server, redis
):
    stack = make_stack(MCP_SERVERS=servers(server, approval="never"))
    fake_llm.script(calls(("c1", "fixture__hang", {})))
    key = start(stack, fake_slack, "wait forever")
    card = card_with(fake_slack, key, "Stop")
    wait_for(lambda: server.calls("hang"), what="the call on the server")

    clicked = time.time()
    assert click(stack, fake_slack, card, "Stop").startswith("Stopping the running turn")
    wait_for(lambda: state(redis, key) == "cancelled", what="the turn to stop")
    heard = wait_for(lambda: server.entries("cancelled"), what="the server to hear the cancellation")
    print(f"the server heard the cancel {heard[0]['at'] - clicked:.3f} s after the Stop click")
    assert len(fake_llm.requests) == 1


def test_a_server_that_dies_mid_call_leaves_the_outcome_unknown_and_runs_nothing_again(
    make_stack, fake_slack, fake_llm: FakeLLM, server, redis
):
    stack = make_stack(MCP_SERVERS=servers(server, approval="never"))
    fake_llm.script(calls(("c1", "fixture__die", {})), text("the server died"))
    key = start(stack, fake_slack, "die")
    answered(fake_slack, key, "the server died")

    result = tool_results(fake_llm.accepted()[1])["c1"]
    assert 'The MCP server "fixture" stopped answering during the call of fixture__die' in result
    assert "do not assume it ran or did not run" in result
    assert len(server.calls("die")) == 1
    assert state(redis, key) == "idle"


def test_a_secret_header_reaches_the_server_and_nowhere_else(
    make_stack, fake_slack, fake_llm: FakeLLM, redis, tmp_path: Path
):
    secret = "mcp-secret-7f3c9a1e5b"
    guarded = McpFixture(tmp_path, require_header=f"X-Api-Key={secret}").start()
    try:
        entry = servers(guarded, approval="never", headers={"X-Api-Key": "$FIXTURE_MCP_TOKEN"})
        stack = make_stack(MCP_SERVERS=entry, FIXTURE_MCP_TOKEN=secret)
        fake_llm.script(calls(("c1", "fixture__echo", {"text": "the key?"})), text("no key here"))
        key = start(stack, fake_slack, "what is your key")
        answered(fake_slack, key, "no key here")
        assert tool_results(fake_llm.accepted()[1])["c1"] == "echo: the key?"
        assert any(entry["headers"].get("x-api-key") == secret for entry in guarded.entries("headers"))
    finally:
        guarded.stop()
    assert secret not in json.dumps(fake_slack.thread(key.channel, key.thread_ts))
    assert secret not in json.dumps(fake_llm.requests)
    assert secret not in json.dumps(SessionStore(redis, key).read_wire())
    assert all(secret not in stack.log(name) for name in stack.processes)


def test_an_internal_server_not_opened_is_refused_and_the_thread_is_told_once(
    make_stack, fake_slack, fake_llm: FakeLLM, server
):
    stack = make_stack(MCP_SERVERS=json.dumps({"fixture": {"url": server.url, "approval": "never"}}))
    fake_llm.script(
        calls(("c1", "fixture__echo", {"text": "a"})),
        calls(("c2", "fixture__echo", {"text": "b"})),
        text("gave up"),
    )
    key = start(stack, fake_slack, "try the server")
    answered(fake_slack, key, "gave up")

    assert "fixture__echo" not in declared(fake_llm.accepted()[0])
    for call, request in (("c1", 1), ("c2", 2)):
        assert 'The MCP server "fixture" is not answering' in tool_results(fake_llm.accepted()[request])[call]
    told = [t for t in thread_texts(fake_slack, key.channel, key.thread_ts) if "is not answering" in t]
    assert len(told) == 1
    assert server.entries() == []
    assert "a loopback address" in stack.log("worker0")


def test_a_changed_tool_list_reaches_the_next_turn(make_stack, fake_slack, fake_llm: FakeLLM, server):
    stack = make_stack(MCP_SERVERS=servers(server, approval="never"))
    fake_llm.script(calls(("c1", "fixture__grow", {})), text("grown"), text("second turn"))
    key = start(stack, fake_slack, "grow")
    answered(fake_slack, key, "grown")
    assert "fixture__grown" not in declared(fake_llm.accepted()[0])
    reply = fake_slack.add_user_message(key.channel, "again", user="W222", thread_ts=key.thread_ts)
    assert stack.send_event(message("again", ts=reply["ts"], thread_ts=key.thread_ts)).status_code == 200
    answered(fake_slack, key, "second turn")
    assert "fixture__grown" in declared(fake_llm.accepted()[-1])


SYSTEM_PYTHON = Path("/usr/bin/python3")


def stdio_servers(journal: str, **entry: object) -> str:
    """A stdio server: the fixture run by the system's python (the sandbox cannot read every
    interpreter, a pyenv one under /root for one), importing the SDK from this virtualenv."""
    site = sysconfig.get_paths()["purelib"]
    command = [str(SYSTEM_PYTHON), str(SOURCE_ROOT / "tests" / "mcp_server.py"), "--site", site]
    return json.dumps({
        "local": {
            "command": [*command, "--stdio", "--journal", journal],
            "read_only": [str(SOURCE_ROOT), site],
            "approval": "never",
            **entry,
        }
    })  # fmt: skip


def _same_python() -> bool:
    if not SYSTEM_PYTHON.exists():
        return False
    said = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True
    )
    return said.stdout.decode().strip() == str(sys.version_info[:2])


def running_with(marker: str) -> list[int]:
    """Pids of live processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            ours = entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes()
            if ours and "State:\tZ" not in (entry / "status").read_text():
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not _same_python(), reason="no /usr/bin/python3 of this interpreter's version")
def test_a_stdio_server_runs_in_the_sessions_sandbox_and_stops_with_the_turn(
    make_stack, fake_slack, fake_llm: FakeLLM, redis, tmp_path: Path
):
    journal = f"journal-{uuid.uuid4().hex}.jsonl"
    outside = tmp_path / "outside.txt"
    outside.write_text("the worker's own file")
    with ConnectionCounter() as listener:
        stack = make_stack(MCP_SERVERS=stdio_servers(journal))
        fake_llm.script(
            calls(
                ("c1", "local__echo", {"text": "from the sandbox"}),
                ("c2", "local__read", {"path": str(outside)}),
                ("c3", "local__reach", {"port": listener.port}),
            ),
            text("contained"),
        )
        key = start(stack, fake_slack, "use the local server")
        answered(fake_slack, key, "contained")
        results = tool_results(fake_llm.accepted()[1])
        assert results["c1"] == "echo: from the sandbox"
        assert results["c2"].startswith("cannot read: No such file or directory")
        assert results["c3"].startswith("cannot connect")
        assert listener.connections == 0
    written = (workspace_of(tmp_path, key) / journal).read_text()
    assert '"tool": "echo", "text": "from the sandbox"' in written
    wait_for(lambda: state(redis, key) == "idle", what="the turn's end")
    wait_for(lambda: not running_with(journal), what="the turn's server to stop")
    assert not list((tmp_path / "workspaces" / ".threadline-mcp").iterdir())  # the listing run's, removed


@pytest.mark.parametrize("vision", [True, False])
def test_an_image_reaches_the_model_only_when_it_reads_images(
    make_stack, fake_slack, fake_llm: FakeLLM, server, vision: bool
):
    fake_llm.vision = vision
    stack = make_stack(MCP_SERVERS=servers(server, approval="never"), LLM_VISION=str(vision).lower())
    fake_llm.script(calls(("c1", "fixture__picture", {})), text("seen"))
    key = start(stack, fake_slack, "show me")
    answered(fake_slack, key, "seen")

    request = json.dumps(fake_llm.accepted()[1]["messages"])
    assert "a pixel" in request and "[resource link: pixel.md <file:///docs/pixel.md>]" in request
    assert ("data:image/png;base64," in request) is vision
    assert ("not shown, the model here does not read images" in request) is not vision


def test_a_server_that_speaks_only_sse_and_is_opened_by_http_get_allow_hosts(
    make_stack, fake_slack, fake_llm: FakeLLM, tmp_path: Path
):
    older = McpFixture(tmp_path, sse=True).start()
    try:
        entry = {"fixture": {"url": older.url, "transport": "sse", "approval": "never"}}
        stack = make_stack(MCP_SERVERS=json.dumps(entry), HTTP_GET_ALLOW_HOSTS=f"127.0.0.1:{older.port}")
        fake_llm.script(calls(("c1", "fixture__echo", {"text": "over sse"})), text("sse works"))
        key = start(stack, fake_slack, "the old server")
        answered(fake_slack, key, "sse works")
        assert tool_results(fake_llm.accepted()[1])["c1"] == "echo: over sse"
    finally:
        older.stop()


def test_a_call_past_its_timeout_is_told_to_stop_and_its_outcome_is_unknown(
    make_stack, fake_slack, fake_llm: FakeLLM, server
):
    stack = make_stack(MCP_SERVERS=servers(server, approval="never", timeout_seconds=1))
    fake_llm.script(calls(("c1", "fixture__hang", {})), text("it timed out"))
    key = start(stack, fake_slack, "wait a second")
    answered(fake_slack, key, "it timed out")
    result = tool_results(fake_llm.accepted()[1])["c1"]
    assert "fixture__hang did not answer within 1 seconds" in result and "do not assume" in result
    wait_for(lambda: server.entries("cancelled"), what="the server to hear the cancellation")


def test_a_worker_killed_during_a_call_leaves_an_unknown_result_notice_and_calls_nothing_again(
    make_stack, fake_slack, fake_llm: FakeLLM, server
):
    stack = make_stack(
        MCP_SERVERS=servers(server, approval="never"), LEASE_TTL_SECONDS="2", JANITOR_INTERVAL_SECONDS="0.5"
    )
    fake_llm.script(calls(("c1", "fixture__hang", {})))
    key = start(stack, fake_slack, "hang, then crash")
    wait_for(lambda: server.calls("hang"), what="the call on the server")
    stack.kill("worker0")
    stack.spawn("worker-after", [THREADLINE, "worker"])

    notice = card_with(fake_slack, key, "Resume")
    wait_for(
        lambda: "unknown" in shown(card_with(fake_slack, key, "Inspect")), what="the unknown-result notice"
    )
    assert "`fixture__hang`" in shown(card_with(fake_slack, key, "Inspect"))
    fake_llm.script(text("not sure it ran"))
    assert click(stack, fake_slack, notice, "Resume").startswith("Resumed")
    answered(fake_slack, key, "not sure it ran")
    assert len(server.calls("hang")) == 1
