"""Keep credentials out of what people, the model and the logs see.

A secret reaches text here in three ways: inside a URL (userinfo, a token in the query), as a
token in free text (git's stderr, an exception's message), and inside an error body that a
provider or Slack sends back. `redact_url` and `redact_text` mask the first two; an error body
is never shown at all: `http_error_summary` keeps the HTTP status and the error code/type the
sender gives, nothing else (a provider's message may quote the key it was sent).

It lives in agent/ because every layer needs it and agent/ may import no other layer; jobs/
and gateway/ import it from here.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

MASK = "***"

# A scheme is short ("git+ssh", "chrome-extension"): bounded, so a long run of "a.a.a…" costs one
# pass, not a scan to its end from every word in it. Unanchored: a URL glued to a long word
# still has its credentials masked.
_URL = re.compile(r"""[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s'"<>`]+""")
# Query parameters whose value is a credential by name: ?access_token=, ?api_key=, ?sig=, …
_SECRET_PARAMETER = re.compile(r"token|key|secret|pass|pwd|auth|sig|credential|session", re.IGNORECASE)
# Token shapes of the services a deployment talks to (Slack, GitHub, GitLab, OpenAI-style keys).
_TOKEN = re.compile(r"\b(xox[abeoprs]-|xapp-|gh[opsru]_|github_pat_|glpat-|sk-)[A-Za-z0-9][A-Za-z0-9_-]{11,}")
_AUTHORIZATION = re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
# An error code worth showing: an identifier or a number, never free text (which may quote input).
_ERROR_CODE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,47}|\d{1,6}")


def redact_url(url: str) -> str:
    """`url` without credentials: the password (or a lone user, often a token) becomes ***,
    and so does every query or fragment value that looks like a token.

    `redis://:pw@host:6379/0` → `redis://:***@host:6379/0`;
    `https://ghp_x@github.com/o/r` → `https://***@github.com/o/r`.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return _without_scheme(url)
    if not parts.scheme or not parts.netloc:
        return _without_scheme(url)  # "user:pw@host": no scheme, still a credential
    redacted = _without_credentials(parts)
    return url if redacted == parts else urlunsplit(redacted)


def redact_text(text: str) -> str:
    """`text` with every URL passed through `redact_url` and known token shapes masked."""
    text = _URL.sub(lambda found: redact_url(found.group(0)), text)
    text = _AUTHORIZATION.sub(lambda found: f"{found.group(1)} {MASK}", text)
    return _TOKEN.sub(lambda found: found.group(1) + MASK, text)


def error_codes(body: object) -> list[str]:
    """The error code and type a JSON error body gives (OpenAI-style `{"error": {"code",
    "type"}}`, Slack's `{"ok": false, "error": "invalid_auth"}`), when they look like codes."""
    data = _as_json(body)
    if not isinstance(data, Mapping):
        return []
    error = data.get("error")
    found: list[Any] = [error.get("code"), error.get("type")] if isinstance(error, Mapping) else [error]
    found += [data.get("code"), data.get("type")]
    codes = [str(value) for value in found if isinstance(value, str | int) and not isinstance(value, bool)]
    return list(dict.fromkeys(code for code in codes if _is_code(code)))


def http_error_summary(status: int, body: object) -> str:
    """`HTTP 401 (invalid_api_key, invalid_request_error)`: the status and codes, never the body."""
    codes = error_codes(body)
    return f"HTTP {status} ({', '.join(codes)})" if codes else f"HTTP {status}"


class RedactingFormatter(logging.Formatter):
    """Every formatted log line, traceback included, goes through `redact_text`: the last
    guard for a URL or token that reached an exception message or a library's log line."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


def _without_credentials(parts: SplitResult) -> SplitResult:
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user, has_password, _ = userinfo.partition(":")
        netloc = f"{user}:{MASK}@{host}" if has_password else f"{MASK}@{host}"
    return parts._replace(
        netloc=netloc, query=_redact_pairs(parts.query), fragment=_redact_pairs(parts.fragment)
    )


def _redact_pairs(pairs: str) -> str:
    """`a=1&access_token=x` → `a=1&access_token=***`, keeping the original spelling otherwise."""
    if "=" not in pairs:
        return pairs
    kept = []
    for pair in pairs.split("&"):
        name, has_value, value = pair.partition("=")
        secret = has_value and (_SECRET_PARAMETER.search(name) or _TOKEN.search(value))
        kept.append(f"{name}={MASK}" if secret else pair)
    return "&".join(kept)


def _without_scheme(value: str) -> str:
    """`user:pw@host/p?token=x` (a URL missing its scheme) → `***@host/p?token=***`."""
    head, has_query, query = value.partition("?")
    if "@" in head:
        head = f"{MASK}@{head.rsplit('@', 1)[1]}"
    return head + (f"?{_redact_pairs(query)}" if has_query else "")


def _as_json(body: object) -> object:
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if not isinstance(body, str):
        return body
    try:
        return json.loads(body)
    except ValueError:
        return None


def _is_code(value: str) -> bool:
    return bool(_ERROR_CODE.fullmatch(value)) and not _TOKEN.search(value)
