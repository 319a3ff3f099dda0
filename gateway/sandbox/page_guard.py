"""Who may drive the sandbox page: the page itself, opened from the URL the sandbox printed.

The page server signs what it forwards with the real signing secret, so a call it accepts counts
as much as one from Slack. Any site a developer visits may make the browser send simple requests
to 127.0.0.1 (a form, a no-cors fetch), and a DNS name rebound to 127.0.0.1 reaches it as the
same origin. So every API call must carry the run's token (only the printed URL holds it), name
the page's own Host, come from no foreign Origin, and be JSON (which another site cannot send
without a preflight, and this server answers none). The response_url the page hands the web
process carries a secret of its own, so nobody can guess it and post fake ephemeral answers.

    guard = PageGuard(port)
    refusal = guard.refusal("POST", "/api/say", request.headers)  # None: go ahead
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Protocol

TOKEN_HEADER = "X-Threadline-Token"
LOCAL_NAMES = ("127.0.0.1", "localhost")  # the names the page is opened by; anything else is rebinding
TOKEN_BYTES = 32


class Headers(Protocol):
    """A request's headers, looked up by name in any case (http.server's message, a dict)."""

    def get(self, name: str, /) -> str | None: ...


@dataclass(frozen=True)
class Refusal:
    status: int
    error: str


class PageGuard:
    def __init__(self, port: int) -> None:
        self.port = port
        self.token = secrets.token_urlsafe(TOKEN_BYTES)  # for the page's API calls, in the printed URL
        self.response_secret = secrets.token_urlsafe(TOKEN_BYTES)  # in response_urls, never shown
        self._hosts = {f"{name}:{port}" for name in LOCAL_NAMES}
        self._origins = {f"http://{host}" for host in self._hosts}

    def refusal(self, method: str, path: str, headers: Headers) -> Refusal | None:
        """Why this request may not go on, or None. Static files need no token: they hold no secret."""
        host, origin = (headers.get("Host") or "").lower(), headers.get("Origin")
        if host not in self._hosts:
            return Refusal(403, "wrong Host: open the page at 127.0.0.1 or localhost")
        if origin is not None and origin.lower() not in self._origins:
            return Refusal(403, "requests from another site are refused")
        if path.startswith("/api/") and not _same(headers.get(TOKEN_HEADER), self.token):
            return Refusal(403, "missing or wrong token: open the URL `threadline sandbox` printed")
        if path.startswith("/response/") and not _same(_segment(path, 2), self.response_secret):
            return Refusal(403, "unknown response_url")
        if method == "POST" and _media_type(headers.get("Content-Type")) != "application/json":
            return Refusal(415, "send application/json")
        return None


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(errors="replace"), expected.encode())


def _segment(path: str, index: int) -> str | None:
    parts = path.split("/")
    return parts[index] if len(parts) > index else None


def _media_type(content_type: str | None) -> str:
    return (content_type or "").partition(";")[0].strip().lower()
