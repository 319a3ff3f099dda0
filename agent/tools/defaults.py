"""Tunable numbers of the tool layer, each with the reason it has this value."""

from __future__ import annotations

# What the model sees of one result: above this the output goes to a spill file and the
# model gets a pointer with a preview (context-core.md §4.6, DEFAULT_TOOL_RESULT_MAX_CHARS).
TOOL_RESULT_MAX_CHARS = 50_000
# What a tool may keep in memory for one result, so a runaway command cannot exhaust the
# worker; the true size is still counted (DEFAULT_TOOL_RESULT_MAX_RETAINED_CHARS).
TOOL_RESULT_MAX_RETAINED_CHARS = 10_000_000
# Preview around the pointer: enough of the start to orient, enough of the end to see
# how it finished (error messages, exit lines).
PREVIEW_HEAD_CHARS = 4_096
PREVIEW_TAIL_CHARS = 1_024
# One line longer than this is cut: minified files and binary-ish output would otherwise
# spend the whole budget on a single line.
MAX_LINE_CHARS = 2_000
LINE_TRUNCATION_MARKER = "[...truncated]"

# How long a cancelled tool may take to wind down before the call resolves as aborted and
# the tool is abandoned (context-core.md §4.5, ABORT_GRACE_MS).
ABORT_GRACE_MS = 2_000

# Spill files live in the session workspace so any worker mounting it can page through them.
SPILL_DIR = ".threadline/tool-results"
SPILL_STEM_MAX_CHARS = 80

# read_file: a page of lines, bounded in characters so a page never needs a spill file
# (reading a spill file must not produce another one).
READ_FILE_DEFAULT_LINES = 2_000
READ_FILE_MAX_CHARS = 40_000
# Lines are read at most this many bytes at a time (4 bytes a character at worst), the rest of a
# longer line skipped: a one-line file of 200 MiB costs a page, not the file, in memory.
READ_FILE_LINE_MAX_BYTES = 4 * MAX_LINE_CHARS + 4
# Lines are counted this far into a file; past it a page still reads, but the total is not
# known and a later offset is refused: the shell's `sed -n` or grep serves a file that large.
READ_FILE_SCAN_MAX_BYTES = 64 * 1024 * 1024
# write_file's content and what edit_file reads and writes: far beyond any source file, far
# below what would strain a worker that runs many turns.
WRITE_FILE_MAX_BYTES = 10_000_000
# Files up to this size are read whole in one call (in the tools lane, like every file read);
# larger ones are paged through a buffered reader.
READ_INLINE_MAX_BYTES = 256 * 1024
# list_dir / glob / grep: enough to be useful, few enough to stay well under the limit.
LIST_DIR_MAX_ENTRIES = 1_000
GLOB_MAX_RESULTS = 1_000
GREP_DEFAULT_MAX_RESULTS = 100
GREP_MAX_RESULTS = 1_000
GREP_MAX_FILE_BYTES = 5_000_000  # larger files are skipped: likely data, not source
# A model-written pattern can backtrack for ever ((a|aa)+c); a search is stopped after this long.
GREP_TIME_LIMIT_S = 20.0
# glob walks the tree through directory descriptors; a pattern that matches slowly, or a tree
# too large, ends here with a message rather than holding a thread for ever.
GLOB_TIME_LIMIT_S = 10.0
# SKILL.md files are read whole: a skill is a page of instructions, not a data file.
SKILL_FILE_MAX_BYTES = 256 * 1024
# Binary sniffing: a NUL byte in the first block means "not text".
BINARY_SNIFF_BYTES = 8_192

# shell: default and ceiling for the per-command timeout, in seconds.
SHELL_DEFAULT_TIMEOUT_S = 120
SHELL_MAX_TIMEOUT_S = 1_800
# Bytes kept per stream; the rest is counted and reported. Half the retention limit each.
SHELL_STREAM_MAX_BYTES = 5_000_000
# Between SIGTERM and SIGKILL for the command's process group; well inside ABORT_GRACE_MS
# so a cancelled command is gone before the executor abandons the call.
SHELL_KILL_GRACE_S = 0.5
# After the shell exits, how long background children may keep the pipes open before the
# group is killed so the result can be delivered.
SHELL_DRAIN_GRACE_S = 0.2

# http_get: bounded body and time, so one fetch cannot stall or flood a turn.
HTTP_DEFAULT_TIMEOUT_S = 30
HTTP_MAX_TIMEOUT_S = 120
HTTP_DEFAULT_MAX_BYTES = 1_000_000
HTTP_MAX_BYTES = 5_000_000
