"""The test vectors of docs/context-core.md: input → expected cases kept in tests/data/vectors.json.

Each vector has an `id` (cited in docs/context-core.md next to the rule it pins), the reference's
function name (`function`) and, where there is one, the project's (`python`).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from agent.messages import Message

DATA = Path(__file__).parent / "data"
VECTORS_FILE = DATA / "vectors.json"


@cache
def all_vectors() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(VECTORS_FILE.read_text())["vectors"])


def all_ids() -> list[str]:
    return [vector["id"] for vector in all_vectors()]


def vectors_for(python_name: str) -> list[dict[str, Any]]:
    return [vector for vector in all_vectors() if vector.get("python") == python_name]


def vectors_with_prefix(prefix: str) -> list[dict[str, Any]]:
    return [vector for vector in all_vectors() if vector["id"].startswith(prefix)]


def messages(items: list[dict[str, Any]]) -> list[Message]:
    return [Message.model_validate(item) for item in items]


def ids(vectors: list[dict[str, Any]]) -> list[str]:
    return [vector["id"] for vector in vectors]
