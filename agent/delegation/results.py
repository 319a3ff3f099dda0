"""How a sub-agent's ending becomes its parent's tool result (or, in the background, a message)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from xml.sax.saxutils import quoteattr

from agent.delegation import texts
from agent.messages import Message, Origin, TextPart
from agent.tools.base import ToolResult

ChildEnd = Literal["completed", "failed", "cancelled", "lost"]
SUBAGENT_RESULT = "subagent_result"  # origin kind of a background answer delivered as input


@dataclass(frozen=True)
class ChildOutcome:
    end: ChildEnd
    description: str
    answer: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.end == "completed"

    def text(self) -> str:
        if self.end == "completed":
            return self.answer or texts.child_no_answer(self.description)
        if self.end == "cancelled":
            return texts.child_cancelled(self.description)
        if self.end == "lost":
            return texts.child_lost(self.description)
        return texts.child_failed(self.description, self.error or "unknown error")

    def as_result(self) -> ToolResult:
        return ToolResult(self.text(), is_error=not self.ok)


def swarm_result(description: str, labels: Sequence[str], outcomes: Sequence[ChildOutcome]) -> ToolResult:
    """Every item's answer in item order; the call is an error only when no item succeeded."""
    failed = sum(not outcome.ok for outcome in outcomes)
    total = len(outcomes)
    lines = [f'Swarm "{description}": {total} items, {total - failed} succeeded, {failed} failed.']
    for index, (label, outcome) in enumerate(zip(labels, outcomes, strict=True), start=1):
        status = "" if outcome.ok else " (failed)"
        lines.append(f"\n[{index}/{total}] {label}{status}\n{outcome.text()}")
    return ToolResult("\n".join(lines), is_error=total > 0 and failed == total)


def background_message(agent_id: str, outcome: ChildOutcome) -> Message:
    """A background sub-agent's answer, delivered to its parent as input."""
    status = "completed" if outcome.ok else outcome.end
    text = (
        f"<subagent-result agent_id={quoteattr(agent_id)} description={quoteattr(outcome.description)} "
        f"status={quoteattr(status)}>\n{outcome.text()}\n</subagent-result>"
    )
    origin = Origin.model_validate(  # agent_id and status are kind-specific extras of Origin
        {"kind": SUBAGENT_RESULT, "trigger": "background", "agent_id": agent_id, "status": status}
    )
    return Message(role="user", content=[TextPart(text=text)], origin=origin)
