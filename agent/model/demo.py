"""The built-in demo model: scripted, honest about it, and good enough to show the product.

Used when no LLM endpoint is configured. It recognises a few simple requests and answers them
with the real tools, so the whole path (tool batches, progress, Stop, approvals) can be seen
without a model key:

    list the files · read README.md · run ls -la · grep TODO · count to 10 slowly
    write NOTES.md: some text · open a pull request titled Add notes
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from agent.messages import Message, TextPart, ToolCall
from agent.model.base import ModelRequest, ModelResponse, StreamListener, Usage

NAME = "threadline-demo"
PREFIX = "*Demo model* (scripted, no LLM behind me): "
HELP = (
    PREFIX + "I only understand a few requests. Try `list the files`, `read README.md`, `run ls -la`, "
    "`grep TODO`, `count to 10 slowly` (a long turn you can Stop), `write NOTES.md: some text` or "
    "`open a pull request titled Add notes`. Set `LLM_BASE_URL` (and `LLM_MODEL`, "
    "`LLM_API_KEY`) to talk to a real model."
)
RESULT_PREVIEW_CHARS = 1500
_AUTHOR = re.compile(r"^<@[A-Z0-9]+>:\s*")

Intent = Callable[[re.Match[str]], tuple[str, dict[str, object]]]
INTENTS: list[tuple[re.Pattern[str], Intent]] = [
    (re.compile(r"\b(list|show)\b.*\bfiles?\b|^ls\b", re.I), lambda m: ("list_dir", {"path": "."})),
    (
        re.compile(r"\b(?:read|open|cat|show)\s+(\S+\.\w+)", re.I),
        lambda m: ("read_file", {"path": m.group(1)}),
    ),
    (re.compile(r"\bcount to (\d+) slowly\b", re.I), lambda m: ("shell", _count_slowly(int(m.group(1))))),
    (re.compile(r"^(?:run|shell|exec)\s+(.+)$", re.I), lambda m: ("shell", {"command": m.group(1)})),
    (
        re.compile(r"^(?:grep|search(?: for)?)\s+(.+)$", re.I),
        lambda m: ("grep", {"pattern": m.group(1).strip()}),
    ),
    (
        re.compile(r"^write\s+(\S+?):\s*(.*)$", re.I | re.S),
        lambda m: ("write_file", {"path": m.group(1), "content": m.group(2).strip() + "\n"}),
    ),
    (
        re.compile(r"\bopen a pull request(?:\s+titled\s+(.+))?$", re.I),
        lambda m: ("open_pull_request", {"title": (m.group(1) or "Changes from the sandbox").strip()}),
    ),
]


def _count_slowly(n: int) -> dict[str, object]:
    n = max(1, min(n, 120))
    return {"command": f"for i in $(seq 1 {n}); do echo $i; sleep 1; done", "timeout": n + 30}


class DemoModel:
    name = NAME

    async def complete(self, request: ModelRequest, listener: StreamListener | None = None) -> ModelResponse:
        message = _answer(request.messages)
        if listener is not None:
            for call in message.tool_calls:
                listener.on_tool_call(call)
            if message.text():
                listener.on_text(message.text())
        finish = "tool_calls" if message.tool_calls else "stop"
        return ModelResponse(message=message, finish_reason=finish, usage=Usage())


def _answer(messages: list[Message]) -> Message:
    if not messages:
        return _text(HELP)
    last = messages[-1]
    if last.role == "tool":
        return _text(_summary(_trailing_results(messages)))
    if last.role != "user":
        return _text(HELP)
    request = _AUTHOR.sub("", last.text().strip().split("\n\n")[-1]).strip()
    for pattern, intent in INTENTS:
        match = pattern.search(request)
        if match:
            name, args = intent(match)
            call_id = f"demo-{sum(len(m.tool_calls) for m in messages) + 1}"
            return Message(
                role="assistant",
                content=[TextPart(text=f"{PREFIX}running `{name}`.")],
                tool_calls=[ToolCall(id=call_id, name=name, arguments=json.dumps(args))],
            )
    return _text(HELP)


def _trailing_results(messages: list[Message]) -> list[Message]:
    results: list[Message] = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        results.insert(0, message)
    return results


def _summary(results: list[Message]) -> str:
    parts = [PREFIX + "here is what the tool returned."]
    for result in results:
        text = result.text()
        shown = text if len(text) <= RESULT_PREVIEW_CHARS else text[:RESULT_PREVIEW_CHARS] + "\n…"
        parts.append(f"```\n{shown}\n```")
    return "\n\n".join(parts)


def _text(text: str) -> Message:
    return Message(role="assistant", content=[TextPart(text=text)])
