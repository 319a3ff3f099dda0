"""Results too long for the model: saved in the workspace, replaced by a pointer (context-core.md §4.6).

A text result over 50,000 chars that is not already truncated, not exempt and carries no
media is written (its retained text, up to 10,000,000 chars) to
`<workspace>/.threadline/tool-results/<stem>-<uuid>.txt`; the model sees a header naming
the file, a 4,096-char head and 1,024-char tail preview (long lines cut), and the suffix.
"""

from __future__ import annotations

import logging
import re
import uuid
from pathlib import Path

from agent.messages import MEDIA_PART_TYPES
from agent.tools.base import ToolResult
from agent.tools.defaults import (
    PREVIEW_HEAD_CHARS,
    PREVIEW_TAIL_CHARS,
    SPILL_DIR,
    SPILL_STEM_MAX_CHARS,
    TOOL_RESULT_MAX_CHARS,
    TOOL_RESULT_MAX_RETAINED_CHARS,
)
from agent.tools.output import cut_long_lines
from agent.tools.workspace import PathSecurityError, write_bytes

log = logging.getLogger(__name__)

_UNSAFE_STEM_RUNS = re.compile(r"[^A-Za-z0-9._-]+")
NEXT_STEP = (
    "next_step: Use read_file with output_path to page through the saved output, or grep to search it."
)


def spill_stem(tool_name: str, tool_call_id: str) -> str:
    """`name-id` with unsafe runs as `_`, outer `_` trimmed, at most 80 chars (or `tool-result`)."""
    stem = _UNSAFE_STEM_RUNS.sub("_", f"{tool_name}-{tool_call_id}").strip("_")[:SPILL_STEM_MAX_CHARS]
    return stem or "tool-result"


def spillable_text(result: ToolResult) -> str | None:
    """The text to spill when the result needs it, else None (short, truncated, exempt, media)."""
    if result.truncated or result.spill_exempt:
        return None
    output = result.output
    if isinstance(output, str):
        text = output
    elif any(part.type in MEDIA_PART_TYPES for part in output):
        return None
    else:
        text = "".join(getattr(part, "text", "") for part in output)
    total = result.spill.total_chars if result.spill and result.spill.total_chars else len(text)
    return text if max(total, len(text)) > TOOL_RESULT_MAX_CHARS else None


def save_spill_file(workspace: Path, stem: str, text: str) -> str:
    """Write atomically; returns the workspace-relative path of the file. It is written the one
    way into the workspace: a link planted at `.threadline/tool-results` (by the shell, or
    committed in a cloned repository) that leads out is refused, never written through."""
    path = f"{SPILL_DIR}/{stem}-{uuid.uuid4()}.txt"
    write_bytes(workspace, path, text.encode("utf-8", errors="replace"))
    return path


def preview_lines(text: str) -> list[str]:
    head = text[:PREVIEW_HEAD_CHARS]
    size = len(text)
    tail_start = max(len(head), size - PREVIEW_TAIL_CHARS)
    lines = ["", f"[preview: chars [0, {len(head)})]", cut_long_lines(head)]
    if tail_start >= size:
        return lines
    if tail_start > len(head):
        lines += ["", f"[elided: chars [{len(head)}, {tail_start})]"]
    return [*lines, "", f"[preview: chars [{tail_start}, {size})]", cut_long_lines(text[tail_start:])]


def render_pointer(
    *, tool_name: str, tool_call_id: str, text: str, total_chars: int, output_path: str | None
) -> str:
    preserved = len(text)
    if output_path is None:
        header = [
            f"Tool output exceeded {TOOL_RESULT_MAX_CHARS} characters and could not be saved to a file; "
            "only this preview is available.",
            f"tool_name: {tool_name}",
            f"tool_call_id: {tool_call_id}",
            f"output_size_chars: {total_chars}",
        ]
        return "\n".join(header + preview_lines(text))
    complete = preserved >= total_chars
    first = (
        f"Tool output exceeded {TOOL_RESULT_MAX_CHARS} characters; the full output was saved to a file."
        if complete
        else f"Tool output exceeded {TOOL_RESULT_MAX_CHARS} characters; the first {preserved} characters "
        f"(of {total_chars}) were saved to a file."
    )
    header = [
        first,
        f"tool_name: {tool_name}",
        f"tool_call_id: {tool_call_id}",
        f"output_size_chars: {total_chars}",
    ]
    if complete:
        header.append(f"output_size_bytes: {len(text.encode('utf-8', 'replace'))}")
    header += [f"output_path: {output_path}", NEXT_STEP]
    return "\n".join(header + preview_lines(text))


def truncate_for_model(
    result: ToolResult, *, tool_name: str, tool_call_id: str, workspace: Path
) -> ToolResult:
    """The result as the model should see it: unchanged, or a pointer to its spill file."""
    text = spillable_text(result)
    if text is None:
        return result
    text = text[:TOOL_RESULT_MAX_RETAINED_CHARS]
    spill = result.spill
    total = max(spill.total_chars if spill and spill.total_chars else 0, len(text))
    try:
        output_path: str | None = save_spill_file(workspace, spill_stem(tool_name, tool_call_id), text)
    except (OSError, ValueError, PathSecurityError):
        log.warning("could not save the output of %s (%s)", tool_name, tool_call_id, exc_info=True)
        output_path = None
    rendered = render_pointer(
        tool_name=tool_name, tool_call_id=tool_call_id, text=text, total_chars=total, output_path=output_path
    )
    if spill and spill.suffix:
        rendered = f"{rendered}\n\n{spill.suffix}"
    return result.with_changes(output=rendered, truncated=True, spill=None)
