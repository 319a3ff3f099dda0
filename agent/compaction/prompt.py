"""The summary request: the history to compact, projected, plus the handoff-note instruction."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent.messages import Message, TextPart
from agent.model.base import ModelRequest

Projector = Callable[[list[Message]], list[Message]]

COMPACTION_INSTRUCTION = """\
Stop here and write a handoff note for yourself. The conversation above is about to be replaced \
by this note: you will carry on the work from the note alone, together with the most recent \
messages, which are kept as they are after it. Anything the note leaves out is gone.

Write the note in the language the conversation is in. Cover, in this order:
1. The request: what the user asked for most recently and the goal behind it, in their terms; \
quote their exact words where the wording matters.
2. Constraints in force: instructions, preferences, limits and decisions the user gave or agreed \
to that still apply.
3. What was done: each step that matters, with the exact commands, file paths, identifiers and \
results (output, errors, numbers, what passed and what failed), and every file changed and how.
4. Where things stand: what works, what is broken, what is half-finished.
5. Unknowns: open questions, things not checked yet, assumptions you are relying on.
6. Next steps: a detailed plan for continuing, concrete enough to act on without the conversation.

Be honest: say plainly which claims you did not verify, and never present a guess as a result. \
Leave out pleasantries and anything that no longer matters.

Reply with the note as plain text only. Do not call any tools."""

# Summaries are long but bounded; providers reject output limits above their own maximum.
MAX_SUMMARY_OUTPUT_TOKENS = 131_072


def compaction_instruction(user_instruction: str | None = None) -> str:
    if user_instruction is None or not user_instruction.strip():
        return COMPACTION_INSTRUCTION
    return f"{COMPACTION_INSTRUCTION}\nOptional user instruction:\n{user_instruction.strip()}\n"


def summary_request(
    history: Sequence[Message],
    *,
    project: Projector,
    instruction: str,
    max_size: float,
    system: str | None = None,
    max_output_tokens: int | None = None,
) -> ModelRequest:
    """No tools are declared: the model is asked for text and must not call anything."""
    messages = [
        *project(_without_tool_schemas(history)),
        Message(role="user", content=[TextPart(text=instruction)]),
    ]
    return ModelRequest(
        messages=messages,
        system=system,
        tools=[],
        max_output_tokens=max_output_tokens or _default_output_limit(max_size),
    )


def _without_tool_schemas(history: Sequence[Message]) -> list[Message]:
    """Dynamically loaded tool schemas are context for calling tools, which a summary never does."""
    kept = []
    for message in history:
        if message.tools is None:
            kept.append(message)
        elif message.content or message.tool_calls:
            kept.append(message.model_copy(update={"tools": None}))
    return kept


def _default_output_limit(max_size: float) -> int:
    if max_size <= 0:
        return MAX_SUMMARY_OUTPUT_TOKENS
    return int(min(max_size, MAX_SUMMARY_OUTPUT_TOKENS))
