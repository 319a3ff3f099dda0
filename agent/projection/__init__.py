"""The context projector (docs/context-core.md, "Projection"): history → the messages of one request."""

from agent.projection.anomalies import Anomaly
from agent.projection.incremental import IncrementalProjector
from agent.projection.inherited import close_trailing_open_tool_exchange
from agent.projection.projector import OnAnomaly, project, project_strict
from agent.projection.rendering import render_tool_result
from agent.projection.report import ProjectionReporter

__all__ = [
    "Anomaly",
    "IncrementalProjector",
    "OnAnomaly",
    "ProjectionReporter",
    "close_trailing_open_tool_exchange",
    "project",
    "project_strict",
    "render_tool_result",
]
