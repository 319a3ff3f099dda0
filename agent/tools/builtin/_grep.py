"""grep: lines matching a Python regular expression, across files.

The pattern is the model's, so it may backtrack catastrophically. It is matched with the
`regex` package (the same syntax as `re`), which takes a time limit: a bad pattern ends as a
tool error at the limit instead of keeping a core busy after its turn. The search runs in the
CPU lane (agent.offload.in_process), so reading a large tree line by line does not hold up the other
turns of the worker; Stop reaches it between lines (a marker file, see _Matcher), and one line's
match is bounded by the time limit.

Files are reached the one way into the workspace (agent.tools.workspace): the search root is
opened from the workspace's descriptor, the tree below it walked through directory descriptors,
and each file opened from its directory's descriptor without following a link.
"""

from __future__ import annotations

import asyncio
import os
import stat
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import regex
from pydantic import Field

from agent.offload import in_process
from agent.tools import accesses as acc
from agent.tools import workspace as ws
from agent.tools.base import Tool, ToolContext, ToolExecution, ToolResult
from agent.tools.builtin.common import Params, ToolError, looks_binary_data, said_to_the_model
from agent.tools.defaults import (
    GREP_DEFAULT_MAX_RESULTS,
    GREP_MAX_FILE_BYTES,
    GREP_MAX_RESULTS,
    GREP_TIME_LIMIT_S,
    MAX_LINE_CHARS,
)
from agent.tools.output import cut_long_lines
from agent.tools.tree_walk import walk

SKIPPED_DIRECTORIES = frozenset({".git"})
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


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


STOP_CHECK_S = 0.05
STOPPED = "grep was stopped."
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
    """Matches lines until a deadline shared by the whole search, or until Stop: the turn's
    process cannot reach into the pool's, so a Stop is a marker file that the search looks for
    between lines (at most every STOP_CHECK_S)."""

    pattern: regex.Pattern[str]
    limit_s: float
    stop_marker: str

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.limit_s
        self.next_check = 0.0

    def check(self) -> float:
        """The seconds left; stops at the marker (looked for at most every STOP_CHECK_S) or past
        the deadline."""
        now = time.monotonic()
        if now >= self.next_check:
            self.next_check = now + STOP_CHECK_S
            if os.path.exists(self.stop_marker):
                raise ToolError(STOPPED)
        if now >= self.deadline:
            raise ToolError(TIMED_OUT.format(pattern=self.pattern.pattern, limit=self.limit_s))
        return self.deadline - now

    def search(self, line: str) -> bool:
        remaining = self.check()
        try:
            return self.pattern.search(line, timeout=remaining, concurrent=True) is not None
        except TimeoutError:
            raise ToolError(TIMED_OUT.format(pattern=self.pattern.pattern, limit=self.limit_s)) from None


def _files(opened: ws.Opened, shown: str, matcher: _Matcher, glob: str | None) -> Iterator[tuple[str, bytes]]:
    """(workspace-relative path, contents) of each text file to search, in order. The tree is
    walked through directory descriptors (agent.tools.tree_walk) and each file opened from its
    directory's without following a link; links, FIFOs, sockets, devices, binary files and
    files over GREP_MAX_FILE_BYTES (as read, whatever their size said) are skipped."""
    if not opened.is_directory:
        data = _text_of(opened.fd) if _wanted(shown, glob) else None
        if data is not None:
            yield shown, data
        return
    prefix = "" if shown == "." else f"{shown}/"
    for level in walk(opened.fd):
        matcher.check()
        level.directories[:] = [name for name in level.directories if name not in SKIPPED_DIRECTORIES]
        for name in level.others:
            relative = prefix + level.path + name
            data = _read_file(level.fd, name) if _wanted(relative, glob) else None
            if data is not None:
                yield relative, data


def _wanted(relative: str, glob: str | None) -> bool:
    return glob is None or PurePosixPath(relative).match(glob)


def _read_file(directory: int, name: str) -> bytes | None:
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=directory)
    except OSError:
        return None  # a link (ELOOP), a socket, or gone since it was listed
    try:
        return _text_of(fd)
    finally:
        os.close(fd)


def _text_of(fd: int) -> bytes | None:
    """The file's bytes when it is a regular text file of at most GREP_MAX_FILE_BYTES, counted as
    read: a file that grows after its size was looked at is still cut off there."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.pread(fd, GREP_MAX_FILE_BYTES + 1, 0)
    except OSError:
        return None
    if len(data) > GREP_MAX_FILE_BYTES or looks_binary_data(data):
        return None
    return data


def _grep(workspace: Path, root: Path, matcher: _Matcher, args: GrepParams) -> str:
    shown = ws.show(workspace, root)
    with said_to_the_model(args.path, "Path not found: {shown}"):
        opened = ws.open_entry(workspace, root)
    matches: list[str] = []
    with opened:
        for relative, data in _files(opened, shown, matcher, args.glob):
            _search(data, relative, matcher, matches, args.max_results)
            if len(matches) > args.max_results:
                break
    if not matches:
        return f"No matches for {args.pattern!r} under {args.path}."
    if len(matches) > args.max_results:
        shown_matches = matches[: args.max_results]
        return "\n".join(
            [
                *shown_matches,
                f"[Stopped after {args.max_results} matches; narrow the search to see the rest.]",
            ]
        )
    return "\n".join(matches)


def _search(data: bytes, relative: str, matcher: _Matcher, matches: list[str], most: int) -> None:
    for number, raw in enumerate(data.splitlines(), start=1):
        line = raw.decode("utf-8", errors="replace")
        if matcher.search(line):
            matches.append(f"{relative}:{number}:{cut_long_lines(line.rstrip(), MAX_LINE_CHARS)}")
            if len(matches) > most:
                return


def _stop(marker: Path, limit_s: float) -> None:
    """Tell the search in the pool to stop; the marker goes once the search is surely over."""
    marker.touch()
    asyncio.get_running_loop().call_later(limit_s + STOP_CHECK_S, marker.unlink, True)


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
        marker = Path(tempfile.gettempdir()) / f"threadline-grep-stop-{uuid.uuid4().hex}"
        matcher = _Matcher(pattern, self.time_limit_s, str(marker))
        forget = context.signal.add_callback(lambda _reason: _stop(marker, self.time_limit_s))
        try:
            return ToolResult(await in_process(_grep, context.workspace, root, matcher, args))
        finally:
            forget()

    async def run(self, args: GrepParams, context: ToolContext) -> ToolResult:
        return await self._grep(context.resolve(args.path), _compile(args), args, context)
