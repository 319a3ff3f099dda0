"""Helpers for delegation tests: a stack running this checkout's code, and a fake model that
answers each agent (parent, sub-agents, forks) from its own script."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.testing import FakeLLM, Reply, text
from gateway.sandbox.stack import Stack
from jobs.keys import SessionKey
from jobs.session.store import SessionStore
from tests.e2e.turns import Session
from tests.polling import wait_for
from tests.unattended import UNATTENDED

Step = Reply | Callable[[dict[str, Any]], Reply]


def start_stack(
    tmp_path: Path, redis_url: str, slack_url: str, llm: FakeLLM, workers: int, **env: str
) -> Stack:
    settings = {**UNATTENDED, **env}
    return Stack(tmp_path, redis_url, slack_url, llm.base_url, **settings).start(workers=workers)


def content_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


@dataclass
class Agents:
    """Routes each request to the script of the agent it comes from.

    An agent is recognised by a marker in its task: the last user message that contains a
    registered marker (a fork's history also holds its parent's task, but its own comes
    later). Its step is the number of assistant messages after that task, so the answer does
    not depend on the order in which parallel agents happen to ask.
    """

    scripts: dict[str, list[Step]] = field(default_factory=dict)
    requests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, marker: str, *steps: Step) -> None:
        self.scripts[marker] = list(steps)

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages", [])
        for index in range(len(messages) - 1, -1, -1):
            if messages[index].get("role") != "user":
                continue
            marker = next((m for m in self.scripts if m in content_text(messages[index])), None)
            if marker is None:
                continue
            step = sum(1 for m in messages[index + 1 :] if m.get("role") == "assistant")
            with self.lock:
                self.requests.setdefault(marker, []).append(body)
            script = self.scripts[marker]
            chosen = script[step] if step < len(script) else text(f"({marker} has nothing more to say)")
            return chosen(body) if callable(chosen) else chosen
        return text("(no script for this request)")

    def of(self, marker: str) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.requests.get(marker, []))


def tool_results(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: content_text(m) for m in request["messages"] if m["role"] == "tool"}


def subagent_keys(redis: Any, parent: SessionKey) -> list[SessionKey]:
    prefix = f"tl:{{{parent}-"
    keys = {raw.decode().split("}")[0][4:] for raw in redis.scan_iter(match=f"{prefix}*:meta")}
    return [SessionKey.parse(key) for key in sorted(keys)]


def state(redis: Any, key: SessionKey) -> str:
    return SessionStore(redis, key).meta.read().state


def wait_for_answer(session: Session, answer: str, timeout: float = 40) -> None:
    wait_for(lambda: answer in session.bot_texts(), timeout=timeout, what=f"the answer {answer!r}")
