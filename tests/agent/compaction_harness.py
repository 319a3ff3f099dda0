"""Turning the vectors' compaction inputs (estimator, config) into Python arguments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.compaction.rules import CompactionConfig, Estimator
from agent.messages import Message
from agent.tokens import estimate_message


def estimator(spec: Any, history: Sequence[Message]) -> Estimator:
    """absent or 'default' = the real estimate; {fixed: n}; {list: [...]} by input index."""
    if spec is None or spec == "default":
        return estimate_message
    if "fixed" in spec:
        fixed = spec["fixed"]
        return lambda _message: fixed
    by_object = {id(message): tokens for message, tokens in zip(history, spec["list"], strict=True)}
    return lambda message: by_object[id(message)]


def config(spec: dict[str, Any] | None) -> CompactionConfig:
    return CompactionConfig.model_validate(spec or {})


def indexes_of(kept: Sequence[Message], history: Sequence[Message]) -> list[int]:
    """Where each kept message sits in the input, by identity (the functions return slices)."""
    position = {id(message): index for index, message in enumerate(history)}
    return [position[id(message)] for message in kept]
