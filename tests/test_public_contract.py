"""The public names of DESIGN.md and the layering rule, checked from outside."""

from __future__ import annotations

import ast
from pathlib import Path

import agent

ROOT = Path(__file__).resolve().parents[1]
DESIGN_NAMES = {
    "Message", "ToolCall", "project", "project_strict", "close_trailing_open_tool_exchange", "Anomaly",
    "estimate_text", "estimate_message", "CompactionConfig", "should_compact", "can_split_after",
    "compute_compact_count", "reduce_compact_on_overflow", "history_safe_to_compact",
    "parse_tool_call_arguments", "ToolScheduler", "ToolOutputAccumulator", "fold",
}  # fmt: skip
FORBIDDEN = {
    "agent": {"slack_bolt", "slack_sdk", "redis", "rq", "gateway", "jobs"},
    "jobs": {"gateway", "slack_bolt", "slack_sdk"},
}


def test_design_names_are_importable_from_agent():
    missing = {name for name in DESIGN_NAMES if not hasattr(agent, name)}
    assert missing == set()
    assert set(agent.__all__) >= DESIGN_NAMES


def imported_packages(package: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            found.setdefault(str(path.relative_to(ROOT)), set()).update(name.split(".")[0] for name in names)
    return found


def test_layers_never_import_upwards():
    for package, forbidden in FORBIDDEN.items():
        offenders = {
            path: used & forbidden for path, used in imported_packages(package).items() if used & forbidden
        }
        assert offenders == {}, f"{package}/ imports {offenders}"
