"""The progress card of one turn: what the agent is doing, call by call, with a Stop button."""

from __future__ import annotations

from typing import Any

from gateway.render import buttons
from gateway.render.text import MAX_BLOCKS, SECTION_LIMIT, context, escape, inline_code, section
from jobs.keys import SessionKey
from jobs.session.notices import ToolLine, TurnCard

MAX_LINES = 40  # a long turn shows its latest calls; the card stays readable and within limits
CHILD_INDENT = "      ↳ "

_TURN_HEADINGS = {
    "running": ":hourglass_flowing_sand: Working",
    "done": ":white_check_mark: Done",
    "failed": ":x: Failed",
    "cancelled": ":black_square_for_stop: Stopped",
    "interrupted": ":warning: Interrupted",
    "awaiting_approval": ":raised_hand: Waiting for approval",
    "timed_out": ":alarm_clock: Timed out",
    "handed_back": ":arrows_counterclockwise: Paused for a restart; another worker goes on with it",
}
_TOOL_MARKS = {
    "running": ":hourglass_flowing_sand:",
    "done": ":white_check_mark:",
    "failed": ":x:",
    "unknown": ":grey_question:",
    "denied": ":no_entry_sign:",
    "skipped": ":fast_forward:",
    "aborted": ":black_square_for_stop:",
    "awaiting_approval": ":raised_hand:",
}
_TOOL_WORDS = {"awaiting_approval": "awaiting approval", "unknown": "outcome unknown"}


def card_blocks(card: TurnCard, session: SessionKey) -> list[dict[str, Any]]:
    heading = _TURN_HEADINGS.get(card.state, card.state)
    facts = [f"*{heading}*", _steps(card.steps), elapsed(card.started_at, card.updated_at)]
    blocks: list[dict[str, Any]] = [section(" · ".join(fact for fact in facts if fact))]
    blocks.extend(_tool_sections(card.tools, card.updated_at))
    if card.note:
        blocks.append(context(escape(card.note)))
    if card.state == "running":
        stop = buttons.button(buttons.STOP, "Stop", buttons.ButtonValue(session), style="danger")
        blocks.append(buttons.actions(stop))
    return blocks[:MAX_BLOCKS]


def card_text(card: TurnCard) -> str:
    """The notification / fallback text of the card."""
    heading = _TURN_HEADINGS.get(card.state, card.state).split(" ", 1)[-1]
    running = [tool.name for tool in card.tools if tool.state == "running"]
    return f"{heading}: running {', '.join(running)}" if running else heading


def tool_line(tool: ToolLine, now: float, indent: str = "• ") -> str:
    mark = _TOOL_MARKS.get(tool.state, "")
    summary = inline_code(tool.summary)
    word = _TOOL_WORDS.get(tool.state, tool.state)
    took = elapsed(tool.started_at, tool.ended_at or now) if tool.started_at else ""
    parts = [f"{indent}{mark} `{escape(tool.name)}`", summary, f"— {word}", took]
    return " ".join(part for part in parts if part)


def elapsed(start: float | None, end: float | None) -> str:
    if start is None or end is None:
        return ""
    seconds = max(0, int(end - start))
    return f"{seconds // 60}:{seconds % 60:02d}"


def _steps(steps: int) -> str:
    return f"step {steps}" if steps else ""


def _tool_sections(tools: list[ToolLine], now: float) -> list[dict[str, Any]]:
    lines = [line for tool in tools for line in _lines(tool, now)]
    hidden = len(lines) - MAX_LINES
    if hidden > 0:
        lines = [f"_… {hidden} earlier line{'s' if hidden > 1 else ''}_", *lines[-MAX_LINES:]]
    sections: list[dict[str, Any]] = []
    current = ""
    for line in lines:
        line = line[: SECTION_LIMIT - 1]
        if current and len(current) + 1 + len(line) > SECTION_LIMIT:
            sections.append(section(current))
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        sections.append(section(current))
    return sections


def _lines(tool: ToolLine, now: float) -> list[str]:
    return [tool_line(tool, now), *(tool_line(child, now, CHILD_INDENT) for child in tool.children)]
