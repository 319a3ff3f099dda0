"""Rendering notices: every kind renders, within Slack's block limits, with the right buttons."""

from __future__ import annotations

import json

import pytest

from gateway.render import notices as render
from gateway.render.buttons import ButtonValue
from gateway.render.progress_card import card_blocks, card_text
from gateway.render.text import (
    MAX_BLOCKS,
    MESSAGE_CHARS,
    SECTION_LIMIT,
    block_chars,
    code_sections,
    inline_code,
)
from jobs.keys import SessionKey
from jobs.session.notices import (
    CancelledNotice,
    CompactionNotice,
    ErrorNotice,
    InfoNotice,
    PullRequestNotice,
    ToolLine,
    TurnCard,
    UnknownResultNotice,
)

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")


def texts(blocks: list[dict]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def action_ids(blocks: list[dict]) -> list[str]:
    return [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


def within_limits(blocks: list[dict]) -> bool:
    sections = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    return len(blocks) <= MAX_BLOCKS and all(len(t) <= SECTION_LIMIT for t in sections)


def card(state: str, tools: list[ToolLine]) -> TurnCard:
    return TurnCard(turn_id="t", state=state, started_at=100.0, updated_at=165.0, steps=3, tools=tools)


def line(name: str, summary: str, state: str = "running", **extra) -> ToolLine:
    return ToolLine(tool_call_id=name, name=name, summary=summary, state=state, started_at=100.0, **extra)


def test_a_running_card_names_each_call_its_state_and_time_and_offers_stop():
    tools = [line("shell", "pytest -x", "done", ended_at=112.0), line("read_file", "src/<app>.py")]
    blocks = card_blocks(card("running", tools), KEY)
    shown = texts(blocks)
    assert "step 3" in shown and "1:05" in shown  # elapsed of the turn
    assert "`shell` `pytest -x` — done 0:12" in shown
    assert "src/&lt;app&gt;.py" in shown and "— running 1:05" in shown
    assert action_ids(blocks) == ["tl_stop"]
    assert ButtonValue.decode(blocks[-1]["elements"][0]["value"]) == ButtonValue(KEY)
    assert card_text(card("running", tools)) == "Working: running read_file"


@pytest.mark.parametrize(
    "state", ["done", "failed", "cancelled", "interrupted", "awaiting_approval", "timed_out"]
)
def test_a_card_that_is_not_running_has_no_stop_button(state):
    assert action_ids(card_blocks(card(state, [line("shell", "ls", "unknown")]), KEY)) == []


def test_a_card_with_hundreds_of_calls_stays_within_slacks_limits():
    children = [line("grep", "x" * 400, "done") for _ in range(3)]
    tools = [line(f"tool{i}", "y" * 500, "done", children=children) for i in range(300)]
    blocks = card_blocks(card("running", tools), KEY)
    assert within_limits(blocks) and "earlier lines" in texts(blocks)
    assert "tool299" in texts(blocks)  # the latest calls are the ones shown


def test_unknown_result_notice_says_what_is_unknown_and_offers_resume_and_inspect():
    message = render.unknown_result(
        UnknownResultNotice(tool_call_id="c9", tool_name="shell", summary="rm -rf `x`"), KEY
    )
    assert (
        "`shell` `rm -rf ˋxˋ`" in message.text
        and "unknown" in message.text
        and "Nothing was re-run." in message.text
    )
    assert action_ids(message.blocks) == ["tl_resume", "tl_inspect"]
    assert ButtonValue.decode(message.blocks[-1]["elements"][1]["value"]).tool_call_id == "c9"


def test_every_other_kind_renders_to_text():
    assert render.cancelled(CancelledNotice(text="Stopped by <@U1>."), KEY).text.endswith("Stopped by <@U1>.")
    assert render.error(ErrorNotice(text="Sorry")).text == "Sorry"
    assert render.info(InfoNotice(text="note")).arguments() == {"text": "note"}
    done = CompactionNotice(state="done", compacted=12, tokens_before=90_000, tokens_after=20_000)
    assert (
        render.compaction(done).text
        == ":compression: Compacted: 12 messages → 1 summary, 90,000 → 20,000 tokens."
    )
    assert "Compacting" in render.compaction(CompactionNotice(state="started")).text
    assert "boom" in render.compaction(CompactionNotice(state="failed", detail="boom")).text


def test_markdown_messages_send_only_markdown_text():
    assert render.SlackMessage(markdown="# hi").arguments() == {"markdown_text": "# hi"}


def test_code_sections_escape_and_fit():
    blocks = code_sections("title", "<&>" * 5000)
    assert within_limits(blocks) and "&lt;&amp;&gt;" in blocks[1]["text"]["text"]
    assert not any(b["text"]["text"].count("&") % 1 for b in blocks if b["type"] == "section")


def test_code_sections_hold_what_one_message_takes_and_say_when_they_cut():
    whole = code_sections("title", "x" * 5_000)
    assert "x" * 2_000 in texts(whole) and "cut" not in texts(whole)
    cut = code_sections("title", "x" * 60_000)
    assert block_chars(cut) <= MESSAGE_CHARS and within_limits(cut)
    assert cut[-1]["type"] == "context" and "60,000 characters in all" in texts(cut[-1:])


def test_inline_code_is_short_and_single_line():
    assert inline_code("a\nb " + "c" * 300, limit=20) == "`a b ccccccccccccccc…`"
    assert inline_code("  ") == ""


@pytest.mark.parametrize(
    "raw",
    [
        *[None, "", "{", "[]", '"x"', '{"s": "bad"}', '{"s": "T:C"}', 42],
        *['{"s":5}', '{"s":null}', '{"s":["T","C","1"]}', '{"s":{"team":"T111"}}'],  # JSON, wrong shape
    ],
)
def test_button_values_threadline_did_not_write_decode_to_none(raw):
    assert ButtonValue.decode(raw) is None


def test_a_compaction_says_in_one_line_what_it_pruned_or_left_out():
    pruned = render.compaction(
        CompactionNotice(state="pruned", pruned=3, tokens_before=12_000, tokens_after=7_000)
    )
    assert pruned.text.startswith(":scissors: Pruned 3 old tool outputs") and "12,000 → 7,000" in pruned.text
    one = render.compaction(CompactionNotice(state="pruned", pruned=1))
    assert "Pruned 1 old tool output " in one.text
    done = render.compaction(CompactionNotice(state="done", compacted=9, dropped=2))
    assert "The 2 oldest messages did not fit the summary request" in done.text
    assert "did not fit" not in render.compaction(CompactionNotice(state="done", compacted=9)).text
    assert "\n" not in pruned.text + done.text


def test_a_gitlab_merge_request_card_is_named_as_gitlab_names_it():
    fields = {"repo": "acme/app", "number": 7, "title": "Fix", "branch": "threadline/x", "base": "main"}
    github = render.pull_request(
        PullRequestNotice(url="https://github.com/acme/app/pull/7", stat="1 file", **fields)
    )
    gitlab = render.pull_request(
        PullRequestNotice(
            forge="gitlab", url="https://gitlab.com/acme/app/-/merge_requests/7", stat="1 file", **fields
        )
    )
    assert github.text == "Pull request #7: https://github.com/acme/app/pull/7"
    assert "Pull request *<https://github.com/acme/app/pull/7|#7 Fix>*" in texts(github.blocks)
    assert gitlab.text == "Merge request !7: https://gitlab.com/acme/app/-/merge_requests/7"
    assert "Merge request *<https://gitlab.com/acme/app/-/merge_requests/7|!7 Fix>*" in texts(gitlab.blocks)
