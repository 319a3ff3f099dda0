"""Prune before summarising: replace old tool outputs by one-line pointers.

When the context is over the compaction trigger and old tool outputs alone are what pushes it
there, replacing them is cheaper than a summary and loses less: the pointer says where the full
output still is (its wire entry, and its spill file when it had one). Only the contents change,
so every call keeps its result and pairing is untouched. The plan becomes one
`context.prune_tool_results` record; `agent.fold` applies it.

All or nothing: when pruning every eligible output still leaves the context over the trigger,
no plan is returned and the caller summarises instead. A partial prune would then only take
detail away from the summariser, which reads the prefix (and its tool outputs) in full.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence

from pydantic import BaseModel, ConfigDict

from agent.compaction.rules import DEFAULT_COMPACTION_CONFIG, CompactionConfig, Estimator, should_compact
from agent.messages import Message, TextPart, is_real_user_input
from agent.tokens import estimate_message
from agent.wire import ToolResultPrune

# The newest user turns are what the model is working on now; their outputs are never pruned.
PROTECTED_USER_TURNS = 2
PRUNED_MARKER = "[tool output pruned]"
# Spill pointers rendered by the output limiter, and the spill directory itself.
_OUTPUT_PATH = re.compile(r"output_path:\s*(\S+)")
# From a word's start only: unanchored, each position of a long word began a scan to its end.
_SPILL_PATH = re.compile(r"(?<!\S)\S*?\.threadline/tool-results/\S+")


class PrunePlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    replacements: dict[str, str]  # tool_call_id → pointer text
    tokens_before: int
    tokens_after: int

    def record(self) -> ToolResultPrune:
        return ToolResultPrune(
            replacements=self.replacements, tokens_before=self.tokens_before, tokens_after=self.tokens_after
        )


def plan_tool_result_prune(
    history: Sequence[Message],
    max_size: float,
    config: CompactionConfig = DEFAULT_COMPACTION_CONFIG,
    *,
    request_overhead_tokens: int = 0,
    estimate: Estimator = estimate_message,
) -> PrunePlan | None:
    """Pointers for the oldest prunable outputs, oldest first, stopping once under the trigger.

    None when the context is not over the trigger, or when pruning alone cannot get it under.
    """
    before = request_overhead_tokens + sum(estimate(message) for message in history)
    used = before
    if not should_compact(used, max_size, config):
        return None
    names = _tool_names(history)
    replacements: dict[str, str] = {}
    for message in _prunable(history):
        pointer = pruned_pointer(message, names.get(message.tool_call_id or ""))
        saving = estimate(message) - estimate(
            message.model_copy(update={"content": [TextPart(text=pointer)]})
        )
        if saving <= 0:
            continue
        replacements[message.tool_call_id or ""] = pointer
        used -= saving
        if not should_compact(used, max_size, config):
            return PrunePlan(replacements=replacements, tokens_before=before, tokens_after=used)
    return None


def pruned_pointer(message: Message, tool_name: str | None) -> str:
    """One line: what was pruned, how big it was, and where the full output still is."""
    chars = sum(len(part.text) for part in message.content if isinstance(part, TextPart))
    media = len(message.content) - sum(isinstance(part, TextPart) for part in message.content)
    size = f"{chars} chars" + (f" and {media} media part{'s' if media > 1 else ''}" if media else "")
    where = []
    if message.id:
        where.append(f"wire entry {message.id}")
    spill = _spill_path(message)
    if spill:
        where.append(f"file {spill}")
    location = "full output in " + " and ".join(where) if where else "full output no longer available"
    return f"{PRUNED_MARKER} {tool_name or 'unknown tool'} call {message.tool_call_id}: {size}; {location}"


def _prunable(history: Sequence[Message]) -> Iterator[Message]:
    """Tool results before the protected user turns, oldest first, not pruned already."""
    end = _protected_start(history)
    # A call id answered twice is ambiguous to a by-id replacement; leave such results alone.
    counts = Counter(message.tool_call_id for message in history if message.role == "tool")
    for message in history[:end]:
        if message.role != "tool" or message.tool_call_id is None or counts[message.tool_call_id] > 1:
            continue
        if not message.text().startswith(PRUNED_MARKER):
            yield message


def _protected_start(history: Sequence[Message]) -> int:
    """Index of the first message of the last PROTECTED_USER_TURNS user turns (0: all protected)."""
    seen = 0
    for index in range(len(history) - 1, -1, -1):
        if is_real_user_input(history[index]):
            seen += 1
            if seen == PROTECTED_USER_TURNS:
                return index
    return 0


def _tool_names(history: Sequence[Message]) -> dict[str, str]:
    return {call.id: call.name for message in history for call in message.tool_calls}


def _spill_path(message: Message) -> str | None:
    text = message.text()
    match = _OUTPUT_PATH.search(text) or _SPILL_PATH.search(text)
    if match is None:
        return None
    return match.group(1) if match.re is _OUTPUT_PATH else match.group(0)
