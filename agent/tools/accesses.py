"""What a tool execution touches, and when two executions must not overlap (context-core.md §4.4).

An execution declares a list of accesses: file entries (read / write / readwrite / search,
optionally recursive) or `all`. Declaring nothing (None) means `all`: the execution runs
alone. An empty list means it touches nothing and never waits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Operation = Literal["read", "write", "readwrite", "search"]
WRITING_OPERATIONS = frozenset({"write", "readwrite"})
_REPEATED_SLASHES = re.compile(r"/{2,}")


def normalize_access_path(path: str) -> str:
    """Backslashes to slashes, repeated slashes collapsed, lower-cased, one trailing slash off."""
    normalized = _REPEATED_SLASHES.sub("/", path.replace("\\", "/")).lower()
    return normalized[:-1] if normalized.endswith("/") else normalized


@dataclass(frozen=True, slots=True)
class FileAccess:
    operation: Operation
    path: str
    recursive: bool = False
    key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", normalize_access_path(self.path))

    @property
    def writes(self) -> bool:
        return self.operation in WRITING_OPERATIONS


@dataclass(frozen=True, slots=True)
class AllAccess:
    pass


Access = FileAccess | AllAccess
ALL: tuple[Access, ...] = (AllAccess(),)
NONE: tuple[Access, ...] = ()


def none() -> tuple[Access, ...]:
    return NONE


def everything() -> tuple[Access, ...]:
    return ALL


def read_file(path: str) -> tuple[Access, ...]:
    return (FileAccess("read", path),)


def read_tree(path: str) -> tuple[Access, ...]:
    return (FileAccess("read", path, recursive=True),)


def write_file(path: str) -> tuple[Access, ...]:
    return (FileAccess("write", path),)


def write_tree(path: str) -> tuple[Access, ...]:
    return (FileAccess("write", path, recursive=True),)


def read_write_file(path: str) -> tuple[Access, ...]:
    return (FileAccess("readwrite", path),)


def read_write_tree(path: str) -> tuple[Access, ...]:
    return (FileAccess("readwrite", path, recursive=True),)


def search_tree(path: str) -> tuple[Access, ...]:
    return (FileAccess("search", path, recursive=True),)


def access_from_json(item: Access | Mapping[str, Any]) -> Access:
    """Accept the spec's JSON shape ({kind:'file', operation, path, recursive?} | {kind:'all'})."""
    if isinstance(item, FileAccess | AllAccess):
        return item
    if item.get("kind") == "all":
        return AllAccess()
    if item.get("kind") != "file":
        raise ValueError(f"unknown access kind: {item.get('kind')!r}")
    return FileAccess(item["operation"], item["path"], bool(item.get("recursive", False)))


def as_accesses(items: Iterable[Access | Mapping[str, Any]] | None) -> tuple[Access, ...]:
    """None (nothing declared) → all; otherwise the entries as typed accesses."""
    if items is None:
        return ALL
    return tuple(access_from_json(item) for item in items)


def _paths_overlap(left: FileAccess, right: FileAccess) -> bool:
    if left.key == right.key:
        return True
    if left.recursive and right.key.startswith(left.key + "/"):
        return True
    return right.recursive and left.key.startswith(right.key + "/")


def access_pair_conflicts(left: Access, right: Access) -> bool:
    if isinstance(left, AllAccess) or isinstance(right, AllAccess):
        return True
    return (left.writes or right.writes) and _paths_overlap(left, right)


def accesses_conflict(
    left: Iterable[Access | Mapping[str, Any]], right: Iterable[Access | Mapping[str, Any]]
) -> bool:
    """True when any entry of `left` conflicts with any entry of `right`; [] conflicts with nothing."""
    left_items = as_accesses(left)
    right_items = as_accesses(right)
    return any(access_pair_conflicts(a, b) for a in left_items for b in right_items)
