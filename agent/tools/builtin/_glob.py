"""glob: files whose paths match a pattern."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path, PurePosixPath

from pydantic import Field

from agent.tools import accesses as acc
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError
from agent.tools.defaults import GLOB_MAX_RESULTS


class GlobParams(Params):
    pattern: str = Field(description="Glob pattern relative to path, e.g. '**/*.py' or 'src/*.ts'.")
    path: str = Field(default=".", description="Directory to search from, relative to the workspace.")


def _check_pattern(pattern: str) -> None:
    if not pattern:
        raise ToolError("pattern must not be empty.")
    if PurePosixPath(pattern).is_absolute() or ".." in PurePosixPath(pattern).parts:
        raise ToolError("pattern must be relative to path and must not contain '..'.")


def _glob(root: Path, workspace: Path, pattern: str, shown: str) -> str:
    if not root.is_dir():
        raise ToolError(f"Directory not found: {shown}")
    real_workspace = Path(os.path.realpath(workspace))
    found: list[str] = []
    for match in root.glob(pattern):
        real = Path(os.path.realpath(match))
        if real != real_workspace and not real.is_relative_to(real_workspace):
            continue  # reached through a symlink that leaves the workspace
        shown_match = match.relative_to(real_workspace).as_posix()
        found.append(f"{shown_match}/" if match.is_dir() else shown_match)
    if not found:
        return f"No paths match {pattern!r} under {shown}."
    found.sort()
    lines = found[:GLOB_MAX_RESULTS]
    if len(found) > GLOB_MAX_RESULTS:
        lines.append(f"[{len(found) - GLOB_MAX_RESULTS} more matches not shown; use a narrower pattern.]")
    return "\n".join(lines)


class Glob(Tool[GlobParams]):
    name = "glob"
    description = (
        "Find files and directories whose paths match a glob pattern ('*' within a name, '**' across "
        "directories). Returns workspace-relative paths, sorted; directories end in /."
    )
    parameters = GlobParams

    def resolve_execution(self, args: GlobParams, context: ToolContext) -> ToolExecution:
        _check_pattern(args.pattern)
        root = context.resolve(args.path)
        return ToolExecution(run=lambda: self._glob(root, args, context), accesses=acc.search_tree(str(root)))

    async def _glob(self, root: Path, args: GlobParams, context: ToolContext) -> ToolResult:
        text = await asyncio.to_thread(_glob, root, context.workspace, args.pattern, context.show(root))
        return ToolResult(text)

    async def run(self, args: GlobParams, context: ToolContext) -> ToolResult:
        _check_pattern(args.pattern)
        return await self._glob(context.resolve(args.path), args, context)
