"""Context projector (context-core.md §2): history → the wire messages of one model request.

`project` pairs every tool call with exactly one result, right after its assistant and in call
order (a missing one gets a placeholder), drops orphan results and empty messages, merges
consecutive real-user messages and renders tool results for the model. `project_strict` adds the
repairs of the one resend after a provider rejected the structure. Both are pure: the history is
never changed, and each repair is reported to `on_anomaly`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent.messages import Message
from agent.projection._pairing import layout_of, walk
from agent.projection._strict import strict_repairs
from agent.projection.anomalies import Anomaly

OnAnomaly = Callable[[Anomaly], None]


def project(history: Sequence[Message], on_anomaly: OnAnomaly | None = None) -> list[Message]:
    result = walk(history, layout_of(history), record=on_anomaly is not None)
    if on_anomaly is not None and result.anomalies:
        for anomaly in result.anomalies:
            on_anomaly(anomaly)
    return result.out


def project_strict(history: Sequence[Message], on_anomaly: OnAnomaly | None = None) -> list[Message]:
    return strict_repairs(project(history, on_anomaly), on_anomaly)
