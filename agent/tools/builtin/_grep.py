"""grep: lines matching a Python regular expression, across files.

The pattern is the model's, so it may backtrack catastrophically. It is matched with the
`regex` package (the same syntax as `re`), which takes a time limit: a bad pattern ends as a
tool error at the limit instead of keeping a core busy after its turn. The search runs in the
CPU pool (agent.tools.cpu_pool), so reading a large tree line by line does not hold up the other
turns of the worker; a cancelled turn leaves it to finish within that limit on its own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import regex
from pydantic import Field

from agent.tools import accesses as acc
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError, looks_binary
from agent.tools.cpu_pool import in_cpu_pool
from agent.tools.defaults import (
    GREP_DEFAULT_MAX_RESULTS,
    GREP_MAX_FILE_BYTES,
    GREP_MAX_RESULTS,
    GREP_TIME_LIMIT_S,
    MAX_LINE_CHARS,
)
from agent.tools.output import cut_long_lines

SKIPPED_DIRECTORIES = frozenset({".git"})


class GrepParams(Params):
    pattern: str = Field(description="Python regular expression to search for (re.search on each line).")
    path: str = Field(default=".", description="File or directory to search, relative to the workspace.")
    glob: str | None = Field(
        default=None, description="Only search files matching this pattern, e.g. '*.py'."
    )
    max_results: int = Field(
        default=GREP_DEFAULT_MAX_RESULTS,
        ge=1,
        le=GREP_MAX_RESULTS,
        description="Most matching lines to return.",
    )
    ignore_case: bool = Field(default=False, description="Match without regard to case.")


TIMED_OUT = (
    "The pattern {pattern!r} was still matching after {limit:g} s and was stopped: it backtracks "
    "too much. Use a simpler pattern (no nested repetition such as (a+)+ or (a|aa)+)."
)


def _compile(args: GrepParams) -> regex.Pattern[str]:
    flags = regex.VERSION0 | (regex.IGNORECASE if args.ignore_case else 0)
    try:
        return regex.compile(args.pattern, flags)
    except regex.error as error:
        raise ToolError(f"Invalid regular expression {args.pattern!r}: {error}") from None


@dataclass
class _Matcher:
    """Matches lines until a deadline shared by the whole search."""

    pattern: regex.Pattern[str]
    limit_s: float

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.limit_s

    def search(self, line: str) -> bool:
        remaining = self.deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            return self.pattern.search(line, timeout=remaining, concurrent=True) is not None
        except TimeoutError:
            raise ToolError(TIMED_OUT.format(pattern=self.pattern.pattern, limit=self.limit_s)) from None


def _files(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = sorted(name for name in subdirectories if name not in SKIPPED_DIRECTORIES)
        for name in sorted(names):
            yield Path(directory) / name


def _searchable(path: Path) -> bool:
    # Symlinks are skipped: one could lead out of the workspace.
    try:
        return (
            not path.is_symlink()
            and path.is_file()
            and path.stat().st_size <= GREP_MAX_FILE_BYTES
            and not looks_binary(path)
        )
    except OSError:
        return False


def _grep(root: Path, workspace: Path, matcher: _Matcher, args: GrepParams) -> str:
    if not root.exists():
        raise ToolError(f"Path not found: {args.path}")
    matches: list[str] = []
    for path in _files(root):
        relative = path.relative_to(workspace).as_posix()
        if args.glob and not PurePosixPath(relative).match(args.glob):
            continue
        if not _searchable(path):
            continue
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if matcher.search(line):
                    matches.append(f"{relative}:{number}:{cut_long_lines(line.rstrip(), MAX_LINE_CHARS)}")
                    if len(matches) > args.max_results:
                        break
        if len(matches) > args.max_results:
            break
    if not matches:
        return f"No matches for {args.pattern!r} under {args.path}."
    if len(matches) > args.max_results:
        shown = matches[: args.max_results]
        return "\n".join(
            [*shown, f"[Stopped after {args.max_results} matches; narrow the search to see the rest.]"]
        )
    return "\n".join(matches)


class Grep(Tool[GrepParams]):
    name = "grep"
    description = (
        "Search file contents with a Python regular expression. Returns 'path:line:text' for each "
        "matching line (binary and very large files are skipped, as is .git). Use glob to limit the "
        "files, e.g. '*.py'."
    )
    parameters = GrepParams

    def __init__(self, time_limit_s: float = GREP_TIME_LIMIT_S) -> None:
        self.time_limit_s = time_limit_s

    def resolve_execution(self, args: GrepParams, context: ToolContext) -> ToolExecution:
        pattern = _compile(args)
        root = context.resolve(args.path)
        return ToolExecution(
            run=lambda: self._grep(root, pattern, args, context), accesses=acc.search_tree(str(root))
        )

    async def _grep(
        self, root: Path, pattern: regex.Pattern[str], args: GrepParams, context: ToolContext
    ) -> ToolResult:
        workspace = Path(os.path.realpath(context.workspace))
        matcher = _Matcher(pattern, self.time_limit_s)
        return ToolResult(await in_cpu_pool(_grep, root, workspace, matcher, args))

    async def run(self, args: GrepParams, context: ToolContext) -> ToolResult:
        return await self._grep(context.resolve(args.path), _compile(args), args, context)
