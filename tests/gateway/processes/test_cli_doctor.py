"""`threadline doctor` as a person runs it: one line per check, exit status says whether all passed."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.processes.cli import main
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import BOT_TOKEN

CLEARED = ("LLM_BASE_URL", "LLM_MODEL", "LLM_API_KEY")


def test_doctor_exits_zero_when_everything_answers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    durable_redis_url: str, fake_slack: FakeSlack,
) -> None:  # fmt: skip
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REDIS_URL", durable_redis_url)
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_API_URL", fake_slack.api_url)
    monkeypatch.setenv("AGENT_WORKDIR", str(tmp_path / "ws"))
    monkeypatch.setenv("SLACK_APPROVERS", "U0APPROVER")

    assert main(["doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["ok", "redis"], ["ok", "persist"], ["ok", "replicas"], ["ok", "storage"], ["ok", "slack"],
        ["ok", "model"], ["ok", "workspace"], ["ok", "sandbox"], ["ok", "approvers"],
    ]  # fmt: skip


def test_doctor_exits_non_zero_and_names_the_fix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for name in (*CLEARED, "REDIS_URL", "SLACK_BOT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENT_WORKDIR", str(tmp_path / "ws"))

    assert main(["doctor"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("FAIL redis") and "threadline sandbox" in lines[0]
    checks = {line.split()[1]: line for line in lines}
    assert checks["slack"].startswith("FAIL slack") and "-- fix: " in checks["slack"]
    assert checks["workspace"].startswith("ok   workspace")


@pytest.mark.parametrize(
    ("settings", "fails"),
    [
        ({}, True),  # shell and http_get ask, and nobody may answer
        ({"SLACK_OPERATORS": "U0OPERATOR"}, False),  # approvers default to the operators
        ({"SLACK_ALLOWED_USERS": "U0A,U0B"}, False),  # a closed group approves its own calls
        ({"APPROVAL_WAIVED_TOOLS": "shell,http_get"}, False),  # nothing asks
        ({"APPROVAL_WAIVED_TOOLS": "shell,http_get", "APPROVAL_TOOLS": "write_file"}, True),
        (  # pull requests ask where a channel's repository has a forge
            {
                "APPROVAL_WAIVED_TOOLS": "shell,http_get",
                "CHANNEL_REPOS": '{"C1": {"url": "https://h/a/b.git", "forge": "github", "repo": "a/b"}}',
            },
            True,
        ),
        (  # an MCP server's tools ask unless its entry says "never"
            {
                "APPROVAL_WAIVED_TOOLS": "shell,http_get",
                "MCP_SERVERS": '{"t": {"url": "https://127.0.0.1:1/"}}',
            },
            True,
        ),
        (
            {
                "APPROVAL_WAIVED_TOOLS": "shell,http_get",
                "MCP_SERVERS": '{"t": {"url": "https://127.0.0.1:1/", "approval": "never"}}',
            },
            False,
        ),
    ],
)
def test_doctor_fails_when_calls_ask_for_approval_nobody_may_give(
    settings: dict[str, str], fails: bool, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:  # fmt: skip
    for name in (*CLEARED, "REDIS_URL", "SLACK_BOT_TOKEN", "SLACK_APPROVERS", "SLACK_OPERATORS",
                 "SLACK_ALLOWED_USERS", "APPROVAL_TOOLS", "APPROVAL_WAIVED_TOOLS"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AGENT_WORKDIR", str(tmp_path / "ws"))

    main(["doctor"])
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.split()[1] == "approvers"]
    assert line.startswith("FAIL" if fails else "ok"), line
    if fails:
        assert "SLACK_APPROVERS" in line
