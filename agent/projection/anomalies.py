"""Projection anomalies (context-core.md §2.6): each repair the projector made to keep a request valid."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

AnomalyKind = Literal[
    "tool_result_reordered",
    "tool_result_synthesized",
    "orphan_tool_result_dropped",
    "duplicate_tool_call_dropped",
    "duplicate_tool_result_dropped",
    "leading_non_user_dropped",
    "consecutive_assistants_merged",
    "whitespace_text_dropped",
    "vacuous_message_dropped",
]

# The fields each kind carries; every other field stays None.
KIND_FIELDS: dict[str, frozenset[str]] = {
    "tool_result_reordered": frozenset({"tool_call_id"}),
    "tool_result_synthesized": frozenset({"tool_call_id", "trailing"}),
    "orphan_tool_result_dropped": frozenset({"tool_call_id"}),
    "duplicate_tool_call_dropped": frozenset({"tool_call_id"}),
    "duplicate_tool_result_dropped": frozenset({"tool_call_id"}),
    "leading_non_user_dropped": frozenset({"role"}),
    "consecutive_assistants_merged": frozenset(),
    "whitespace_text_dropped": frozenset({"role"}),
    "vacuous_message_dropped": frozenset({"role"}),
}
_OPTIONAL_FIELDS = ("tool_call_id", "role", "trailing")


class Anomaly(BaseModel):
    """One repair. `model_dump(exclude_none=True)` gives the spec's exact shape."""

    model_config = ConfigDict(frozen=True)

    kind: AnomalyKind
    tool_call_id: str | None = None
    role: str | None = None
    trailing: bool | None = None

    @model_validator(mode="after")
    def _fields_match_kind(self) -> Anomaly:
        carried = KIND_FIELDS[self.kind]
        for field in _OPTIONAL_FIELDS:
            if (getattr(self, field) is not None) != (field in carried):
                raise ValueError(f"{self.kind} {'needs' if field in carried else 'has no'} {field}")
        return self

    def signature(self) -> str:
        """`kind:tool_call_id` for the kinds that name a call, otherwise just `kind`."""
        return self.kind if self.tool_call_id is None else f"{self.kind}:{self.tool_call_id}"


def reordered(tool_call_id: str) -> Anomaly:
    return Anomaly(kind="tool_result_reordered", tool_call_id=tool_call_id)


def synthesized(tool_call_id: str, trailing: bool) -> Anomaly:
    return Anomaly(kind="tool_result_synthesized", tool_call_id=tool_call_id, trailing=trailing)


def orphan_dropped(tool_call_id: str) -> Anomaly:
    return Anomaly(kind="orphan_tool_result_dropped", tool_call_id=tool_call_id)


def duplicate_call_dropped(tool_call_id: str) -> Anomaly:
    return Anomaly(kind="duplicate_tool_call_dropped", tool_call_id=tool_call_id)


def duplicate_result_dropped(tool_call_id: str) -> Anomaly:
    return Anomaly(kind="duplicate_tool_result_dropped", tool_call_id=tool_call_id)


def leading_dropped(role: str) -> Anomaly:
    return Anomaly(kind="leading_non_user_dropped", role=role)


def assistants_merged() -> Anomaly:
    return Anomaly(kind="consecutive_assistants_merged")


def whitespace_dropped(role: str) -> Anomaly:
    return Anomaly(kind="whitespace_text_dropped", role=role)


def vacuous_dropped(role: str) -> Anomaly:
    return Anomaly(kind="vacuous_message_dropped", role=role)
