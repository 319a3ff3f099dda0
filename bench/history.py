"""A deterministic synthetic coding-agent history for benchmarks.

Each turn: a user prompt; 1–3 steps of an assistant making 1–3 tool calls, each answered by a
tool result of 1–20 short lines; a final assistant answer. The last turn is cut wherever
`n_messages` falls, like a history read while a turn is running. Every message has a stream-like
`id`, as a history folded from Redis has.
"""

from __future__ import annotations

import json
import random

from agent.messages import USER_ORIGIN, Message, TextPart, ToolCall

TOOLS = ("Read", "Grep", "Bash", "Edit", "Glob")
WORDS = ("config", "handler", "session", "retry", "token", "thread", "worker", "queue", "cache", "lease")
PATHS = ("agent/loop.py", "jobs/store.py", "gateway/app.py", "agent/tools/bash.py", "tests/test_turn.py")


def make_history(n_messages: int, seed: int = 0) -> list[Message]:
    rng = random.Random(seed)
    history: list[Message] = []
    turn = 0
    while len(history) < n_messages:
        _append_turn(history, rng, turn)
        turn += 1
    return history[:n_messages]


def _append_turn(history: list[Message], rng: random.Random, turn: int) -> None:
    _add(history, role="user", content=[TextPart(text=_sentence(rng, 8, 30))], origin=USER_ORIGIN)
    for step in range(rng.randint(1, 3)):
        calls = [_call(rng, f"call_{turn}_{step}_{k}") for k in range(rng.randint(1, 3))]
        _add(history, role="assistant", content=[TextPart(text=_sentence(rng, 3, 12))], tool_calls=calls)
        for call in calls:
            _add(history, role="tool", content=[TextPart(text=_output(rng))], tool_call_id=call.id)
    _add(history, role="assistant", content=[TextPart(text=_sentence(rng, 10, 60))])


def _add(history: list[Message], **fields: object) -> None:
    history.append(Message(id=f"{len(history) + 1}-0", **fields))  # type: ignore[arg-type]


def _call(rng: random.Random, call_id: str) -> ToolCall:
    arguments = {"path": rng.choice(PATHS), "pattern": rng.choice(WORDS)}
    return ToolCall(id=call_id, name=rng.choice(TOOLS), arguments=json.dumps(arguments))


def _sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def _output(rng: random.Random) -> str:
    return "\n".join(rng.choices(_OUTPUT_LINES, k=rng.randint(1, 20)))


def _output_lines(count: int) -> tuple[str, ...]:
    # A fixed pool of grep-like lines: drawing whole lines keeps generation fast enough to build
    # a fresh 10,000-message history for every cold benchmark run.
    rng = random.Random(1)
    return tuple(f"{rng.choice(PATHS)}:{rng.randint(1, 900)}: {_sentence(rng, 2, 6)}" for _ in range(count))


_OUTPUT_LINES = _output_lines(512)
