"""A slow, literal reading of context-core.md §2.1-2.4 (pair into blocks, then flatten), for property tests.

It shares nothing with agent.projection._pairing or agent.projection._projected_message except
the vetted renderer and the message vocabulary; it builds every message through validation and
keeps the two passes apart, the way the spec describes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.messages import Message, TextPart, is_vacuous_part
from agent.projection.anomalies import Anomaly
from agent.projection.rendering import render_tool_result

PLACEHOLDER = (
    "Tool result is not available in the current context. Do not assume the tool completed successfully."
)
INTERRUPTED = object()


@dataclass
class _Pending:
    call_id: str
    result: object = None
    foreign: bool = False


@dataclass
class _Exchange:
    source: Message
    content: list
    owner: int
    pending: list[_Pending] = field(default_factory=list)


def oracle_project(history: list[Message]) -> tuple[list[Message], list[Anomaly]]:
    anomalies: list[Anomaly] = []
    countable = [(i, m) for i, m in enumerate(history) if m.partial is not True and m.role != "tool"]
    sizing = not any(m.role == "assistant" for _, m in countable)
    last_non_tool = countable[-1][0] if countable else -1

    blocks: list = []
    open_calls: dict[str, tuple[_Exchange, _Pending]] = {}
    for index, message in enumerate(history):
        if message.partial is True:
            continue
        if message.role == "tool" and not sizing:
            if message.tool_call_id is None:
                continue
            if message.tool_call_id not in open_calls:
                for _, pending in open_calls.values():
                    pending.foreign = True
                orphan = Anomaly(kind="orphan_tool_result_dropped", tool_call_id=message.tool_call_id)
                anomalies.append(orphan)
                continue
            _, pending = open_calls.pop(message.tool_call_id)
            pending.result = _wire(message, _content(message, anomalies))
            if pending.foreign:
                anomalies.append(Anomaly(kind="tool_result_reordered", tool_call_id=message.tool_call_id))
            continue
        content = _content(message, anomalies)
        if not message.tool_calls and not message.tools:
            if not content:
                continue
            if all(is_vacuous_part(part) for part in content):
                anomalies.append(Anomaly(kind="vacuous_message_dropped", role=message.role))
                continue
        for _, pending in open_calls.values():
            pending.foreign = True
        if not message.tool_calls:
            blocks.append(("plain", message, content))
            continue
        exchange = _Exchange(message, content, index)
        blocks.append(("exchange", exchange))
        for call in message.tool_calls:
            if call.id in open_calls:
                earlier, superseded = open_calls[call.id]
                superseded.result = INTERRUPTED
                anomalies.append(
                    Anomaly(
                        kind="tool_result_synthesized",
                        tool_call_id=call.id,
                        trailing=earlier.owner >= last_non_tool,
                    )
                )
            pending = _Pending(call.id)
            exchange.pending.append(pending)
            open_calls[call.id] = (exchange, pending)
    return _flatten(blocks, last_non_tool, anomalies), anomalies


def _flatten(blocks: list, last_non_tool: int, anomalies: list[Anomaly]) -> list[Message]:
    out: list[Message] = []
    group: list[tuple[Message, list]] = []

    def flush() -> None:
        if len(group) == 1:
            out.append(_wire(*group[0]))
        elif group:
            texts, others = [], []
            for _, content in group:
                text = "".join(part.text for part in content if part.type == "text")
                if text:
                    texts.append(text)
                others.extend(part for part in content if part.type != "text")
            joined = "\n\n".join(texts)
            merged = ([TextPart(text=joined)] if joined else []) + others
            out.append(Message(role="user", content=merged))
        group.clear()

    for block in blocks:
        if block[0] == "plain":
            source, content = block[1], block[2]
            if source.role == "user" and source.origin is not None and source.origin.kind == "user":
                group.append((source, content))
                continue
            flush()
            out.append(_wire(source, content))
            continue
        flush()
        exchange = block[1]
        out.append(_wire(exchange.source, exchange.content))
        for pending in exchange.pending:
            if pending.result is None:
                out.append(_placeholder(pending.call_id))
                anomalies.append(
                    Anomaly(
                        kind="tool_result_synthesized",
                        tool_call_id=pending.call_id,
                        trailing=exchange.owner >= last_non_tool,
                    )
                )
            elif pending.result is INTERRUPTED:
                out.append(_placeholder(pending.call_id))
            else:
                out.append(pending.result)
    flush()
    return out


def _content(message: Message, anomalies: list[Anomaly]) -> list:
    content = message.content
    if message.role == "tool":
        only = content[0] if len(content) == 1 and content[0].type == "text" else None
        output = only.text if only is not None else content
        content = render_tool_result(output, is_error=message.is_error, note=message.note)
    kept = []
    for part in content:
        if part.type == "text" and not part.text.strip():
            if part.text:
                anomalies.append(Anomaly(kind="whitespace_text_dropped", role=message.role))
            continue
        kept.append(part)
    assert kept or message.role != "tool", "a rendered tool result is never empty"
    return kept


def _wire(source: Message, content: list) -> Message:
    return Message(
        role=source.role,
        name=source.name,
        content=content,
        tool_calls=source.tool_calls,
        tool_call_id=source.tool_call_id,
        partial=source.partial,
        tools=source.tools,
    )


def _placeholder(call_id: str) -> Message:
    return Message(role="tool", content=[TextPart(text=PLACEHOLDER)], tool_call_id=call_id)
