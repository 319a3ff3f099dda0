"""Access to the spec's test vectors (a copy of ../shared/spec/vectors.json kept in tests/data)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from agent.messages import Message

DATA = Path(__file__).parent / "data"
SHARED_VECTORS = Path(__file__).resolve().parents[2] / "shared" / "spec" / "vectors.json"


@cache
def all_vectors() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads((DATA / "vectors.json").read_text())["vectors"])


def vectors_for(python_name: str) -> list[dict[str, Any]]:
    return [vector for vector in all_vectors() if vector.get("python") == python_name]


def vectors_with_prefix(prefix: str) -> list[dict[str, Any]]:
    return [vector for vector in all_vectors() if vector["id"].startswith(prefix)]


def messages(items: list[dict[str, Any]]) -> list[Message]:
    return [Message.model_validate(item) for item in items]


def ids(vectors: list[dict[str, Any]]) -> list[str]:
    return [vector["id"] for vector in vectors]
