"""The projector's single pass (context-core.md §2.1-2.3): pair tool results with their calls, then flatten.

The reference pairs messages into blocks and flattens the blocks in a second pass. This pass does
both at once: an exchange writes its assistant and reserves one output slot per call, in call
order; a result fills its call's slot wherever it arrives; calls still open at the end get the
placeholder. "A foreign message came between the call and its result" is an epoch counter that
every such message bumps, so marking all open calls costs O(1).

The pass also reports the last *settled* point: a prefix whose output and anomalies no later
message can change (see `Walk`), which is what incremental projection builds on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from agent.messages import Message
from agent.projection import anomalies as an
from agent.projection._projected_message import (
    MEMO_KEY,
    MERGEABLE,
    PARTIAL,
    PLAIN,
    TOOL,
    VACUOUS,
    Projected,
    merged_user_message,
    projected,
    unavailable_result,
)
from agent.projection.anomalies import Anomaly

NEVER = 1 << 62  # an index no history reaches


@dataclass(frozen=True, slots=True)
class Layout:
    """The pre-pass (context-core.md §2.1). `first_assistant_index` is -1 in sizing mode."""

    sizing: bool
    last_non_tool_index: int
    first_assistant_index: int


def layout_of(history: Sequence[Message], first_assistant_index: int | None = None) -> Layout:
    """Scans from both ends, so it costs the distance to the first assistant and the trailing tools."""
    last_non_tool = -1
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.partial is not True and message.role != "tool":
            last_non_tool = index
            break
    if first_assistant_index is None:
        first_assistant_index = -1
        for index, message in enumerate(history):
            if message.role == "assistant" and message.partial is not True:
                first_assistant_index = index
                break
    return Layout(first_assistant_index < 0, last_non_tool, first_assistant_index)


@dataclass(slots=True)
class Walk:
    """The output and anomalies of `history[start:]`, and the last settled point.

    Settled at `settled_index` means: the messages before it project to `out[:settled_out]` with
    `anomalies[:settled_anomalies]` whatever is appended later, because at that point no call is
    open, the last block is not a mergeable user message, the prefix holds an assistant (so the
    sizing mode cannot flip), holds no partial message (which may still be replaced), and none of
    its anomalies says `trailing` (a later non-tool message would make it non-trailing).
    """

    out: list[Message]
    anomalies: list[Anomaly] | None
    settled_index: int
    settled_out: int
    settled_anomalies: int


def walk(history: Sequence[Message], layout: Layout, start: int = 0, record: bool = False) -> Walk:
    """Project `history[start:]`, assuming nothing before `start` is open or mergeable.

    With `record`, anomalies are collected in order (built only then: they are pydantic models).
    """
    sizing = layout.sizing
    last_non_tool = layout.last_non_tool_index
    settle_from = NEVER if sizing else layout.first_assistant_index
    out: list[Message | None] = []  # None: a slot reserved for a call's result
    anomalies: list[Anomaly] | None = [] if record else None
    open_calls: dict[str, tuple[int, int, int]] = {}  # call id -> (output slot, epoch, owner index)
    epoch = 0
    run: list[Message] | None = None  # consecutive mergeable user messages, first one at out[run_at]
    run_at = 0
    settled = (start, 0, 0)
    for index, message in enumerate(history[start:], start):
        # The pass reads the memoised record and no field: on a long history the cost is memory
        # traffic, one scattered object per read, and a record holds all the pass needs.
        # pydantic types the private dict as optional; None (and no memo) raise TypeError here.
        try:
            entry: Projected = message.__pydantic_private__["_memo"][MEMO_KEY]  # type: ignore[index]  # None: TypeError below
        except (KeyError, TypeError):
            entry = projected(message)
        kind, wire, whitespace, call_ids, call_id, role, sizing_kind = entry
        if kind == TOOL:
            if not sizing:
                if call_id is None:
                    continue
                pending = open_calls.pop(call_id, None)
                if pending is None:
                    epoch += 1
                    if anomalies is not None:
                        anomalies.append(an.orphan_dropped(call_id))
                    continue
                out[pending[0]] = wire or message
                if anomalies is not None:
                    _report_result(anomalies, whitespace, call_id, pending[1] != epoch)
                if not open_calls and run is None and index >= settle_from:
                    settled = (index + 1, len(out), len(anomalies) if anomalies is not None else 0)
                continue
            kind = sizing_kind
        elif kind == PARTIAL:
            settle_from = NEVER
            continue
        if anomalies is not None and (whitespace or kind == VACUOUS):
            _report_dropped_content(anomalies, role, whitespace, kind == VACUOUS)
        if kind <= VACUOUS:
            continue
        wire = wire or message
        epoch += 1
        if kind == MERGEABLE:
            if run is None:
                run, run_at = [wire], len(out)
                out.append(wire)
            else:
                run.append(wire)
            continue
        if run is not None:
            if len(run) > 1:
                out[run_at] = merged_user_message(run)
            run = None
        out.append(wire)
        if kind == PLAIN:
            if not open_calls and index >= settle_from:
                settled = (index + 1, len(out), len(anomalies) if anomalies is not None else 0)
            continue
        for call_id in call_ids:
            superseded = open_calls.pop(call_id, None)
            if superseded is not None:
                out[superseded[0]] = unavailable_result(call_id)
                trailing = superseded[2] >= last_non_tool
                if trailing:  # only when a message repeats an id; a later message would flip it
                    settle_from = NEVER
                if anomalies is not None:
                    anomalies.append(an.synthesized(call_id, trailing))
            open_calls[call_id] = (len(out), epoch, index)
            out.append(None)
    if run is not None and len(run) > 1:
        out[run_at] = merged_user_message(run)
    for call_id, (slot, _, owner) in open_calls.items():
        out[slot] = unavailable_result(call_id)
        if anomalies is not None:
            anomalies.append(an.synthesized(call_id, owner >= last_non_tool))
    return Walk(cast(list[Message], out), anomalies, *settled)  # every reserved slot is filled now


def _report_result(anomalies: list[Anomaly], whitespace: int, call_id: str, reordered: bool) -> None:
    anomalies.extend(an.whitespace_dropped("tool") for _ in range(whitespace))
    if reordered:
        anomalies.append(an.reordered(call_id))


def _report_dropped_content(anomalies: list[Anomaly], role: str, whitespace: int, vacuous: bool) -> None:
    anomalies.extend(an.whitespace_dropped(role) for _ in range(whitespace))
    if vacuous:
        anomalies.append(an.vacuous_dropped(role))
