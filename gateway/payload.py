"""Reading fields out of Slack payloads, with one clear error when a payload is not what Slack sends.

`InvalidPayload` becomes an HTTP 400 naming the field (gateway.app), never a 5xx: a malformed
request is the sender's problem, and Slack must not be asked to retry it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from jobs import log_context
from jobs.keys import SessionKey
from jobs.session.user_input import SharedFile

MAX_FILES = 10  # Slack attaches at most 10 files to one message; more is not Slack talking
MAX_NAME_CHARS = 255  # a longer "name" is not a file name; the worker shortens it further


class InvalidPayload(ValueError):
    pass


def text(mapping: Any, name: str) -> str:
    """A required non-empty string field."""
    value = mapping.get(name) if isinstance(mapping, Mapping) else None
    if not isinstance(value, str) or not value:
        raise InvalidPayload(f"{name} is missing or not a string")
    return value


def optional_text(mapping: Any, name: str) -> str | None:
    value = mapping.get(name) if isinstance(mapping, Mapping) else None
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidPayload(f"{name} is not a string")
    return value


def team_id(body: Any, fallback: str | None) -> str:
    """The workspace a request came from: the body's `team_id`, else `fallback` (Bolt's context)."""
    team = optional_text(body, "team_id") or fallback
    if not team:
        raise InvalidPayload("team_id is missing")
    return team


def section(mapping: Any, name: str) -> Mapping[str, Any]:
    """A required object field."""
    value = mapping.get(name) if isinstance(mapping, Mapping) else None
    if not isinstance(value, Mapping):
        raise InvalidPayload(f"{name} is missing or not an object")
    return value


def session_key(team: str, channel: str, thread_ts: str) -> SessionKey:
    """The session these ids name; InvalidPayload when one is not a Slack id (`C:1`, `T{x}`)."""
    try:
        key = SessionKey(team=team, channel=channel, thread_ts=thread_ts)
    except ValidationError as error:
        first = error.errors()[0]
        raise InvalidPayload(f"{'.'.join(str(part) for part in first['loc'])}: {first['msg']}") from None
    log_context.bind(**log_context.session_fields(key))  # the rest of the request's lines name it
    return key


def shared_files(event: Any) -> list[SharedFile]:
    """The files shared with a message (`event.files`), as far as they describe themselves.

    Nothing is trusted: each field is checked here for its type only, and the worker that
    downloads them checks names, hosts, types and sizes itself (jobs.turn.uploads).
    """
    files = event.get("files") if isinstance(event, Mapping) else None
    if files is None:
        return []
    if not isinstance(files, list) or len(files) > MAX_FILES:
        raise InvalidPayload(f"event.files is not a list of at most {MAX_FILES} files")
    return [_shared_file(item) for item in files if isinstance(item, Mapping) and item.get("id")]


def _shared_file(item: Mapping[str, Any]) -> SharedFile:
    name = optional_text(item, "name") or optional_text(item, "title") or "file"
    size = item.get("size")
    return SharedFile(
        id=text(item, "id"),
        name=name[:MAX_NAME_CHARS],
        mimetype=(optional_text(item, "mimetype") or "")[:MAX_NAME_CHARS],
        size=size if isinstance(size, int) and size >= 0 else 0,
        url=optional_text(item, "url_private_download") or optional_text(item, "url_private") or "",
    )


def with_file_names(said: str, files: list[SharedFile]) -> str:
    """The message's text with the names of its files noted, as the thread shows them."""
    if not files:
        return said
    return f"{said}\n(attached: {', '.join(shared.name for shared in files)})".strip()
