"""The YAML subset a SKILL.md front matter uses, read without a YAML library.

Supported: `key: value` scalars (plain, 'single' or "double" quoted, true/false/yes/no,
null/~, integers), inline lists `[a, "b c"]`, block lists (`- item` lines under `key:`),
one level of nested `key: value` mappings, block scalars (`|` keeps line breaks, `>` folds
them) and `#` comments. Anything else is an error naming the line, so a skill author learns
what to fix instead of getting a half-read skill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*:(?:\s+(.*))?$")
_INT = re.compile(r"^[+-]?\d+$")
_TRUE = frozenset({"true", "yes", "on"})
_FALSE = frozenset({"false", "no", "off"})
_NULL = frozenset({"null", "~", ""})


class FrontMatterError(ValueError):
    """The front matter cannot be read; the message names the line."""


@dataclass
class _Line:
    number: int
    indent: int
    text: str


def parse_front_matter(text: str, first_line: int = 2) -> dict[str, Any]:
    """The mapping the front matter block (without its `---` fences) describes."""
    lines = [
        _Line(first_line + index, len(raw) - len(raw.lstrip(" ")), raw.strip())
        for index, raw in enumerate(text.split("\n"))
    ]
    return _Reader(lines).mapping(indent=0)


class _Reader:
    def __init__(self, lines: list[_Line]) -> None:
        self.lines = lines
        self.at = 0

    def _next_meaningful(self) -> _Line | None:
        while self.at < len(self.lines):
            line = self.lines[self.at]
            if line.text and not line.text.startswith("#"):
                return line
            self.at += 1
        return None

    def mapping(self, indent: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        while (line := self._next_meaningful()) is not None and line.indent >= indent:
            if line.indent > indent:
                raise FrontMatterError(f"line {line.number}: unexpected indentation")
            match = _KEY.match(line.text)
            if match is None:
                raise FrontMatterError(f"line {line.number}: expected 'key: value', got {line.text!r}")
            key, raw = match.group(1), (match.group(2) or "").strip()
            if key in result:
                raise FrontMatterError(f"line {line.number}: {key!r} is given twice")
            self.at += 1
            result[key] = self._value(raw, line)
        return result

    def _value(self, raw: str, line: _Line) -> Any:
        raw = _strip_comment(raw)
        if raw in ("|", ">", "|-", ">-", "|+", ">+"):
            return self._block_scalar(raw[0], line.indent)
        if raw:
            return scalar(raw, line.number)
        child = self._next_meaningful()
        if child is None or child.indent <= line.indent:
            return None
        if child.text.startswith("- ") or child.text == "-":
            return self._block_list(child.indent)
        return self.mapping(child.indent)

    def _block_list(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while (line := self._next_meaningful()) is not None and line.indent == indent:
            if not (line.text.startswith("- ") or line.text == "-"):
                break
            self.at += 1
            items.append(scalar(_strip_comment(line.text[1:].strip()), line.number))
        return items

    def _block_scalar(self, style: str, parent_indent: int) -> str:
        collected: list[str] = []
        indent: int | None = None
        while self.at < len(self.lines):
            line = self.lines[self.at]
            if line.text and line.indent <= parent_indent:
                break
            self.at += 1
            if not line.text:
                collected.append("")
                continue
            indent = line.indent if indent is None else indent
            raw = self.lines[self.at - 1]
            collected.append(" " * max(raw.indent - indent, 0) + raw.text)
        while collected and not collected[-1]:
            collected.pop()
        if style == "|":
            return "\n".join(collected)
        return _fold(collected)


def scalar(raw: str, number: int) -> Any:
    """One scalar (or inline list) as YAML reads it."""
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise FrontMatterError(f"line {number}: an inline list must end with ']'")
        return [scalar(item.strip(), number) for item in _split_inline(raw[1:-1], number) if item.strip()]
    if raw[:1] in ("'", '"'):
        return _quoted(raw, number)
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    if lowered in _NULL:
        return None
    if _INT.match(raw):
        return int(raw)
    return raw


def _quoted(raw: str, number: int) -> str:
    quote = raw[0]
    if len(raw) < 2 or raw[-1] != quote:
        raise FrontMatterError(f"line {number}: unterminated {quote}quoted{quote} string")
    inner = raw[1:-1]
    if quote == "'":
        return inner.replace("''", "'")
    return inner.replace('\\"', '"').replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")


def _split_inline(body: str, number: int) -> list[str]:
    items, current, quote = [], [], ""
    for char in body:
        if quote:
            current.append(char)
            if char == quote:
                quote = ""
        elif char in ("'", '"'):
            quote = char
            current.append(char)
        elif char == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    if quote:
        raise FrontMatterError(f"line {number}: unterminated {quote}quoted{quote} string")
    items.append("".join(current))
    return items


def _strip_comment(raw: str) -> str:
    if raw[:1] in ("'", '"'):
        return raw
    cut = raw.find(" #")
    return raw if cut < 0 else raw[:cut].rstrip()


def _fold(lines: list[str]) -> str:
    paragraphs: list[str] = []
    current: list[str] = []
    for line in lines:
        if line:
            current.append(line)
        else:
            paragraphs.append(" ".join(current))
            current = []
    paragraphs.append(" ".join(current))
    return "\n".join(paragraphs).strip("\n")
