"""What a history looks like after a compaction, and when a summary may still be applied.

This project's shape (spec, "Where this project departs"): the prefix `[0, n)` becomes one
summary message and the tail `[n, len)` stays verbatim, so no tool exchange is ever split. It
is the same shape `agent.fold` rebuilds from a `context.apply_compaction` record.
`compaction_shape` is the reference shape (kept real user messages + summary), kept so the
`shape-01` vector pins the token accounting both shapes share.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from agent.compaction.rules import Estimator
from agent.fold import COMPACTION_SUMMARY_ORIGIN
from agent.messages import Message, TextPart, is_real_user_input
from agent.tokens import estimate_message, estimate_text

COMPACTION_SUMMARY_PREFIX = (
    "This conversation was compacted to fit the context window. The text below is your own "
    "working summary of the earlier part, written by you as a handoff note: treat it as notes, "
    "not as verified facts, and check any claim that matters before relying on it. The messages "
    "after this one are kept exactly as they were."
)
EMPTY_SUMMARY_TEXT = "(no summary available)"


def context_summary_text(summary: str) -> str:
    """The text of the summary message: the fixed prefix, then the model's summary."""
    return f"{COMPACTION_SUMMARY_PREFIX}\n{summary.strip() or EMPTY_SUMMARY_TEXT}"


def summary_message(context_summary: str, *, id: str | None = None) -> Message:
    return Message(
        role="user", content=[TextPart(text=context_summary)], origin=COMPACTION_SUMMARY_ORIGIN, id=id
    )


def compacted_history(
    history: Sequence[Message], compacted_count: int, context_summary: str
) -> list[Message]:
    """`[summary] + history[compacted_count:]`: the tail keeps its message objects."""
    return [summary_message(context_summary), *history[compacted_count:]]


def tokens_after_compaction(
    context_summary: str,
    kept: Sequence[Message],
    request_overhead_tokens: int = 0,
    summary_output_tokens: int | None = None,
    estimate: Estimator = estimate_message,
) -> int:
    """Overhead + the summary (measured output tokens when known) + the kept messages."""
    summary_tokens = (
        summary_output_tokens if summary_output_tokens is not None else estimate_text(context_summary)
    )
    return request_overhead_tokens + summary_tokens + sum(estimate(message) for message in kept)


def history_safe_to_compact(current: Sequence[Message], original: Sequence[Message]) -> bool:
    """May a summary of `original` replace its prefix in `current`?

    Only if `current` still starts with `original` (the same objects in-process, or the same
    wire entry ids after a reload from Redis) and everything appended since is real user input,
    which the summary does not need to have seen.
    """
    return unsafe_reason(current, original) is None


def unsafe_reason(current: Sequence[Message], original: Sequence[Message]) -> str | None:
    """Why `history_safe_to_compact` is false, in words for a log or a thread notice."""
    if len(current) < len(original):
        return "the history shrank while the summary was being written"
    for index, (now, then) in enumerate(zip(current, original, strict=False)):
        if now is not then and (then.id is None or now.id != then.id):
            return f"message {index} changed while the summary was being written"
    for message in current[len(original) :]:
        if not is_real_user_input(message):
            return f"a {message.role} message was added while the summary was being written"
    return None


class ReferenceCompactionShape(BaseModel):
    model_config = ConfigDict(frozen=True)

    summary: str
    context_summary: str
    compacted_count: int
    tokens_before: int
    tokens_after: int
    kept_user_message_count: int
    messages: list[Message]


def compaction_shape(
    history: Sequence[Message],
    *,
    summary: str,
    context_summary: str,
    compacted_count: int,
    tokens_before: int,
    request_overhead_tokens: int = 0,
    estimate: Estimator = estimate_message,
) -> ReferenceCompactionShape:
    """The reference applied shape: every real user message, then the summary.

    Only the case where the kept messages fit the reference's 20 000-token budget is built: this
    project applies `compacted_history`, and the reference's elision text is not specified.
    """
    kept = [message for message in history if is_real_user_input(message)]
    return ReferenceCompactionShape(
        summary=summary,
        context_summary=context_summary,
        compacted_count=compacted_count,
        tokens_before=tokens_before,
        tokens_after=tokens_after_compaction(
            context_summary, kept, request_overhead_tokens, estimate=estimate
        ),
        kept_user_message_count=len(kept),
        messages=[*kept, summary_message(context_summary)],
    )
