"""glob: files whose paths match a pattern.

The tree is walked through directory descriptors (agent.tools.tree_walk, which never follows a
link nor waits on a FIFO), from the search root opened the one way into the workspace
(agent.tools.workspace), so a link or a swapped directory cannot lead the walk out. A link to a
directory is listed as a match, not entered. The pattern is the model's: runs of `**` are one
`**`, each path is matched with a time limit, and the walk ends at GLOB_TIME_LIMIT_S or at Stop.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path, PurePosixPath

import regex
from pydantic import Field

from agent.offload import in_thread
from agent.tools import accesses as acc
from agent.tools import workspace as ws
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError, said_to_the_model
from agent.tools.defaults import GLOB_MAX_RESULTS, GLOB_TIME_LIMIT_S
from agent.tools.tree_walk import walk

TOO_SLOW = (
    "glob {pattern!r} was still walking after {limit:g} s and was stopped. Use a narrower path or "
    "pattern (fewer '**'), or the shell's find."
)
STOPPED = "glob was stopped."


class GlobParams(Params):
    pattern: str = Field(description="Glob pattern relative to path, e.g. '**/*.py' or 'src/*.ts'.")
    path: str = Field(default=".", description="Directory to search from, relative to the workspace.")


def _check_pattern(pattern: str) -> None:
    if not pattern:
        raise ToolError("pattern must not be empty.")
    if PurePosixPath(pattern).is_absolute() or ".." in PurePosixPath(pattern).parts:
        raise ToolError("pattern must be relative to path and must not contain '..'.")


def _segments(pattern: str) -> list[str]:
    segments: list[str] = []
    for segment in pattern.split("/"):
        if segment in ("", ".") or (segment == "**" and segments[-1:] == ["**"]):
            continue
        segments.append(segment)
    return segments


def _name_regex(segment: str) -> str:
    """One path component: `*` and `?` stay within it, `[...]` is a class (`[!...]` negated)."""
    out, index = [], 0
    while index < len(segment):
        char = segment[index]
        index += 1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (close := segment.find("]", index + 1)) > 0:
            inner = segment[index:close]
            out.append(
                "[" + ("^" + inner[1:] if inner.startswith("!") else inner).replace("\\", "\\\\") + "]"
            )
            index = close + 1
        else:
            out.append(regex.escape(char))
    return "".join(out)


def compile_pattern(pattern: str) -> tuple[regex.Pattern[str], bool, int | None]:
    """The regex a relative path must match, whether only directories match (a final `**`, as in
    pathlib), and the deepest level a match can lie at (None with `**`)."""
    segments = _segments(pattern)
    dirs_only = segments[-1] == "**"
    parts = []
    for position, segment in enumerate(segments):
        last = position == len(segments) - 1
        if segment == "**":
            parts.append("(?:[^/]+(?:/[^/]+)*)?" if last else "(?:[^/]+/)*")
        else:
            parts.append(_name_regex(segment) + ("" if last else "/"))
    source = "".join(parts).replace("(?:[^/]+/)*(?:[^/]+(?:/[^/]+)*)?", "(?:[^/]+(?:/[^/]+)*)?")
    depth = None if "**" in segments else len(segments)
    return regex.compile(source, regex.VERSION0 | regex.DOTALL), dirs_only, depth


class _Walk:
    def __init__(self, pattern: str, stop: threading.Event, limit_s: float) -> None:
        self.text = pattern
        self.regex, self.dirs_only, self.depth = compile_pattern(pattern)
        self.stop = stop
        self.limit_s = limit_s
        self.deadline = time.monotonic() + limit_s

    def check(self) -> float:
        """The seconds left; stops at Stop or past the deadline."""
        if self.stop.is_set():
            raise ToolError(STOPPED)
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise ToolError(TOO_SLOW.format(pattern=self.text, limit=self.limit_s))
        return remaining

    def matches(self, relative: str) -> bool:
        remaining = self.check()
        try:
            return self.regex.fullmatch(relative, timeout=remaining) is not None
        except TimeoutError:
            raise ToolError(TOO_SLOW.format(pattern=self.text, limit=self.limit_s)) from None

    def run(self, root: int, prefix: str) -> list[str]:
        found: list[str] = []
        for level in walk(root):
            self.check()
            depth = level.path.count("/") + 1  # of the entries listed here
            found += [
                f"{prefix}{level.path}{name}/"
                for name in level.directories
                if self.matches(level.path + name)
            ]
            if not self.dirs_only and (self.depth is None or depth <= self.depth):
                found += [
                    f"{prefix}{level.path}{name}" for name in level.others if self.matches(level.path + name)
                ]
            if self.depth is not None and depth >= self.depth:
                level.directories.clear()  # nothing deeper can match
        return found


def _glob(workspace: Path, root: Path, shown: str, walk: _Walk) -> str:
    with said_to_the_model(shown, "Directory not found: {shown}"):
        opened = ws.open_entry(workspace, root)
    with opened:
        if not opened.is_directory:
            raise ToolError(f"Directory not found: {shown}")
        found = walk.run(opened.fd, "" if shown == "." else f"{shown}/")
    if not found:
        return f"No paths match {walk.text!r} under {shown}."
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

    def __init__(self, time_limit_s: float = GLOB_TIME_LIMIT_S) -> None:
        self.time_limit_s = time_limit_s

    def resolve_execution(self, args: GlobParams, context: ToolContext) -> ToolExecution:
        _check_pattern(args.pattern)
        root = context.resolve(args.path)
        return ToolExecution(run=lambda: self._glob(root, args, context), accesses=acc.search_tree(str(root)))

    async def _glob(self, root: Path, args: GlobParams, context: ToolContext) -> ToolResult:
        stop = threading.Event()
        forget = context.signal.add_callback(lambda _reason: stop.set())
        walk = _Walk(args.pattern, stop, self.time_limit_s)
        try:
            return ToolResult(await in_thread(_glob, context.workspace, root, context.show(root), walk))
        finally:
            forget()
            stop.set()  # a call given up on (cancelled task) ends its walk too

    async def run(self, args: GlobParams, context: ToolContext) -> ToolResult:
        _check_pattern(args.pattern)
        return await self._glob(context.resolve(args.path), args, context)
