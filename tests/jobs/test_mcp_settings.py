"""MCP_SERVERS: a fault stops the process in one line that names it, never echoing a header."""

from __future__ import annotations

import json

import pytest

from agent.tools.mcp.tool import DESCRIPTION_MAX_CHARS, capped, tool_name
from jobs.settings import Settings, SettingsError

LITERAL_SECRET = "Bearer lit-3c1d9e"


def refusal(monkeypatch, servers: object) -> str:
    monkeypatch.setenv("MCP_SERVERS", servers if isinstance(servers, str) else json.dumps(servers))
    with pytest.raises(SettingsError) as raised:
        Settings.load()
    return str(raised.value)


@pytest.mark.parametrize(
    ("servers", "said"),
    [
        ({"bad_name": {"url": "https://a/mcp"}}, "the server name 'bad_name' is not 1-32 letters"),
        ({"a": {"url": "ftp://a/mcp"}}, "at a.url: String should match pattern"),
        ({"a": {"url": "https://a/mcp", "command": ["x"]}}, 'at a: give either "url"'),
        ({"a": {"command": ["x"], "headers": {"A": "b"}}}, '"headers", "internal" and "transport" are for'),
        ({"a": {"url": "https://a/mcp", "approval": "sometimes"}}, "at a.approval"),
        (
            {"a": {"url": "https://a/mcp", "headers": {"A": "$THREADLINE_NO_SUCH"}}},
            "THREADLINE_NO_SUCH, which",
        ),
        ({"a": {"url": "https://a/mcp", "headers": {"A": LITERAL_SECRET}, "colour": 1}}, "at a.colour"),
        ('{"a": ', "not a JSON object"),
    ],
)
def test_a_faulty_entry_is_named_in_one_line_without_its_values(monkeypatch, servers, said):
    message = refusal(monkeypatch, servers)
    assert message.startswith("threadline: invalid setting MCP_SERVERS") and said in message
    assert "\n" not in message and LITERAL_SECRET not in message


def test_a_header_naming_a_set_variable_is_accepted(monkeypatch):
    monkeypatch.setenv("TRACKER_TOKEN", "t")
    servers = {"tracker": {"url": "https://t.example/mcp", "headers": {"Authorization": "$TRACKER_TOKEN"}}}
    monkeypatch.setenv("MCP_SERVERS", json.dumps(servers))
    entry = Settings.load().MCP_SERVERS["tracker"]
    assert entry.asks("anything") and entry.serves("C1") and entry.environment_names() == ["TRACKER_TOKEN"]


def test_tool_names_fit_what_providers_accept_and_descriptions_are_capped():
    assert tool_name("docs", "search.pages/v2") == "docs__search_pages_v2"
    assert len(tool_name("s" * 32, "t" * 100)) == 64
    assert len(capped("x" * 5000)) == DESCRIPTION_MAX_CHARS and capped("short") == "short"
