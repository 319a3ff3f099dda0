"""Reporting projection repairs (context-core.md §2.6, service level): one warning per new kind of repair.

A trailing open exchange is normal (its calls are in flight), so `tool_result_synthesized` with
`trailing` is ignored. The rest is summarised by a signature; the warning (and telemetry event)
goes out only when the signature changes, and a clean projection forgets the last one, so a
history that stays broken in the same way logs once, not before every model call.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agent.projection.anomalies import Anomaly

log = logging.getLogger(__name__)

REPAIRED_MESSAGE = "repaired the request to keep it wire-valid"
TELEMETRY_EVENT = "context_projection_repaired"
MAX_REPORTED_CALL_IDS = 5  # enough to find the exchanges in the wire log, short enough for one line
COUNTER_OF_KIND = {
    "tool_result_reordered": "reordered",
    "tool_result_synthesized": "synthesized",
    "orphan_tool_result_dropped": "dropped_orphan",
    "duplicate_tool_call_dropped": "duplicate_calls_dropped",
    "duplicate_tool_result_dropped": "duplicate_results_dropped",
    "leading_non_user_dropped": "leading_dropped",
    "consecutive_assistants_merged": "assistants_merged",
    "whitespace_text_dropped": "whitespace_dropped",
    "vacuous_message_dropped": "vacuous_dropped",
}

Telemetry = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class ProjectionRepair:
    signature: str
    counters: dict[str, int]
    tool_call_ids: list[str]
    # Each kind of repair made and the calls it touched (none for kinds about a message's role),
    # in full: what the session's record keeps (TurnSink.repaired).
    call_ids_by_kind: dict[str, list[str]] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        return {"signature": self.signature, **self.counters, "tool_call_ids": self.tool_call_ids}


def summarize(anomalies: Iterable[Anomaly]) -> ProjectionRepair | None:
    """The repair worth reporting, or None when there is only in-flight (trailing) work."""
    notable = [a for a in anomalies if not (a.kind == "tool_result_synthesized" and a.trailing)]
    if not notable:
        return None
    counts = Counter(COUNTER_OF_KIND[anomaly.kind] for anomaly in notable)
    call_ids = dict.fromkeys(a.tool_call_id for a in notable if a.tool_call_id is not None)
    return ProjectionRepair(
        signature="|".join(sorted(anomaly.signature() for anomaly in notable)),
        counters={name: counts[name] for name in COUNTER_OF_KIND.values()},
        tool_call_ids=list(call_ids)[:MAX_REPORTED_CALL_IDS],
        call_ids_by_kind=_call_ids_by_kind(notable),
    )


def _call_ids_by_kind(anomalies: list[Anomaly]) -> dict[str, list[str]]:
    by_kind: dict[str, dict[str, None]] = {}
    for anomaly in anomalies:
        ids = by_kind.setdefault(anomaly.kind, {})
        if anomaly.tool_call_id is not None:
            ids[anomaly.tool_call_id] = None
    return {kind: list(ids) for kind, ids in by_kind.items()}


class ProjectionReporter:
    """Pass it as `on_anomaly` to a projection, then call `report()` once the projection is done.

    Keep one per session loop: the last signature is what suppresses repeats.
    """

    def __init__(self, logger: logging.Logger = log, telemetry: Telemetry | None = None) -> None:
        self._logger = logger
        self._telemetry = telemetry
        self._pending: list[Anomaly] = []
        self._last_signature: str | None = None

    def __call__(self, anomaly: Anomaly) -> None:
        self._pending.append(anomaly)

    def report(self) -> ProjectionRepair | None:
        """Close the current projection; returns the repair when it was logged."""
        anomalies, self._pending = self._pending, []
        repair = summarize(anomalies)
        if repair is None:
            self._last_signature = None
            return None
        if repair.signature == self._last_signature:
            return None
        self._last_signature = repair.signature
        fields = repair.fields()
        line = " ".join(f"{name}={_text(value)}" for name, value in fields.items())
        self._logger.warning("%s: %s", REPAIRED_MESSAGE, line, extra={"projection_repair": fields})
        if self._telemetry is not None:
            self._telemetry(TELEMETRY_EVENT, {**repair.counters, "tool_call_ids": repair.tool_call_ids})
        return repair


def _text(value: Any) -> str:
    return ",".join(value) if isinstance(value, list) else str(value)
