"""The demo model drives the real loop and tools, and says what it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.model.demo import HELP, DemoModel
from tests.agent.loop.harness import MemorySink, run_turn


def turn(tmp_path: Path, text: str):
    sink = MemorySink()
    sink.append_user(f"<@U1>: {text}")
    outcome = run_turn(sink, "http://127.0.0.1:9/unused", tmp_path, model=DemoModel())
    return outcome, sink


def test_list_the_files_uses_the_list_tool(tmp_path: Path):
    (tmp_path / "README.md").write_text("# hello\n")
    outcome, sink = turn(tmp_path, "please list the files")
    assert outcome.reason == "completed"
    assert "Demo model" in outcome.answer and "README.md" in outcome.answer
    assert [r["event"]["name"] for r in sink.records if r.get("event", {}).get("type") == "tool.call"] == [
        "list_dir"
    ]


def test_read_a_file(tmp_path: Path):
    (tmp_path / "README.md").write_text("the secret word is banana\n")
    outcome, _ = turn(tmp_path, "read README.md")
    assert "banana" in outcome.answer


@pytest.mark.parametrize("text", ["what is the meaning of life?", ""])
def test_anything_else_gets_an_honest_help_text(tmp_path: Path, text: str):
    outcome, _ = turn(tmp_path, text)
    assert outcome.answer == HELP
    assert "scripted" in HELP and "LLM_BASE_URL" in HELP


def test_write_a_file_then_ask_for_a_pull_request(tmp_path: Path):
    outcome, _ = turn(tmp_path, "write NOTES.md: remember the milk")
    assert (tmp_path / "NOTES.md").read_text() == "remember the milk\n" and outcome.reason == "completed"

    _, asked = turn(tmp_path, "open a pull request titled Add notes")
    [call] = [r["event"] for r in asked.records if r.get("event", {}).get("type") == "tool.call"]
    assert (call["name"], call["arguments"]) == ("open_pull_request", '{"title": "Add notes"}')
