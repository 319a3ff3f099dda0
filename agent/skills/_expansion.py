"""Argument expansion in a skill's body (context-core.md §6) and the text an activation delivers.

Arguments are split into whitespace tokens, quotes grouping a token (`a "b c"` is two
tokens). `$ARGUMENTS` is the whole string, `$ARGUMENTS[i]` and `$i` the i-th token
(0-based, so `$0` is the first, as in the reference's skills), `$name` the token at the
position of `name` in the front matter's `arguments`. `${THREADLINE_SKILL_DIR}` and
`${THREADLINE_SESSION_ID}` (and the reference's `${KIMI_SKILL_DIR}` / `${KIMI_SESSION_ID}`)
name the skill's directory and the session. Replacement is one pass, so an argument that
itself contains `$1` is inserted as written. With no argument placeholder in the body, a
non-empty argument string is appended as "\\n\\nARGUMENTS: <args>".
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

SKILL_DIR_VARIABLES = ("THREADLINE_SKILL_DIR", "KIMI_SKILL_DIR")
SESSION_ID_VARIABLES = ("THREADLINE_SESSION_ID", "KIMI_SESSION_ID")
_ENV = re.compile(r"\$\{(" + "|".join(SKILL_DIR_VARIABLES + SESSION_ID_VARIABLES) + r")\}")


def split_arguments(args: str) -> list[str]:
    """Whitespace tokens with quotes grouping; unbalanced quotes fall back to plain splitting."""
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def expand_arguments(
    body: str, args: str, *, names: Sequence[str] = (), skill_dir: str = "", session_id: str = ""
) -> str:
    tokens = split_arguments(args)
    placeholders = _placeholder_pattern(names)
    used = False

    def argument(match: re.Match[str]) -> str:
        nonlocal used
        used = True
        if match.group("all") is not None:
            return args
        index = _index(match, names)
        return tokens[index] if 0 <= index < len(tokens) else ""

    expanded = placeholders.sub(argument, body)
    expanded = _ENV.sub(lambda m: skill_dir if m.group(1) in SKILL_DIR_VARIABLES else session_id, expanded)
    if not used and args.strip():
        expanded = f"{expanded}\n\nARGUMENTS: {args.strip()}"
    return expanded


def _placeholder_pattern(names: Sequence[str]) -> re.Pattern[str]:
    named = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    alternatives = [
        r"\$ARGUMENTS\[(?P<indexed>\d+)\]",
        r"\$(?P<all>ARGUMENTS)\b",
        r"\$(?P<positional>\d+)",
    ]
    if named:
        alternatives.append(rf"\$(?P<named>{named})\b")
    return re.compile("|".join(alternatives))


def _index(match: re.Match[str], names: Sequence[str]) -> int:
    for group in ("indexed", "positional"):
        if match.group(group) is not None:
            return int(match.group(group))
    return list(names).index(match.group("named"))
