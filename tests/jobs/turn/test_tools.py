"""Which calls of a turn wait for a person: the turn's own tools, policy and approval check,
built from settings as `jobs/turn/runner.py` builds them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agent.loop.parking import approval_check
from agent.messages import ToolCall
from agent.tools.cancel import CancelSignal
from jobs.keys import SessionKey
from jobs.session.store import SessionStore
from jobs.settings import Settings
from jobs.turn.tools import approval_policy, turn_tools

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")
CALLS = {
    "shell": {"command": "make deploy"},
    "http_get": {"url": "https://example.com/"},
    "read_file": {"path": "notes.txt"},
    "write_file": {"path": "notes.txt", "content": "hi"},
}


def parked(redis, tmp_path: Path, **settings: str) -> dict[str, str | None]:
    """Each call of CALLS in one step, through the turn's approval check: name → reason, if it waits."""
    config = Settings(AGENT_WORKDIR=tmp_path / "ws", LLM_MODEL="m", **settings)
    tools = turn_tools(SessionStore(redis, KEY), config, tmp_path, None, list)
    check = approval_check(tools.registry, tmp_path, approval_policy(config))
    step = [ToolCall(id=name, name=name, arguments=json.dumps(args)) for name, args in CALLS.items()]
    return {p.call.name: p.reason for p in asyncio.run(check(step, CancelSignal()))}


def test_a_turns_shell_and_http_get_wait_for_approval_by_default(redis, tmp_path: Path):
    assert parked(redis, tmp_path) == {
        "shell": '"shell" reaches beyond the workspace files and needs approval.',
        "http_get": '"http_get" reaches beyond the workspace files and needs approval.',
    }


def test_only_an_explicit_waiver_lets_a_turns_shell_run_unasked(redis, tmp_path: Path):
    assert set(parked(redis, tmp_path, APPROVAL_WAIVED_TOOLS="shell")) == {"http_get"}
    assert set(parked(redis, tmp_path, APPROVAL_TOOLS="read_file")) == {"shell", "http_get", "read_file"}


def test_approval_tools_adds_a_tool_that_does_not_declare_it(redis, tmp_path: Path):
    waived = parked(redis, tmp_path, APPROVAL_TOOLS="write_file", APPROVAL_WAIVED_TOOLS="shell,http_get")
    assert waived == {"write_file": '"write_file" needs a person\'s approval in this workspace.'}
