"""Thread links as people paste them into `/agent cancel <link>`.

Slack's "Copy link" gives `https://<team>.slack.com/archives/<channel>/p<ts without dot>`, and
for a reply adds `?thread_ts=<root ts>&cid=<channel>`; in a slash command's text the link may
come wrapped as `<url>` or `<url|label>`. The thread is the root: `thread_ts` when present.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, urlparse

_ARCHIVE_PATH = re.compile(r"/archives/(?P<channel>[CDG][A-Z0-9]+)/p(?P<seconds>\d{10})(?P<micros>\d{6})$")
_TS = re.compile(r"^\d{10}\.\d{6}$")


@dataclass(frozen=True)
class ThreadRef:
    channel: str
    thread_ts: str


def parse_thread_link(text: str) -> ThreadRef | None:
    """The thread a pasted link points at, or None when it is not a Slack message link."""
    link = text.strip()
    if link.startswith("<") and link.endswith(">"):
        link = link[1:-1].split("|", 1)[0]
    parsed = urlparse(link)
    if parsed.scheme not in ("http", "https"):
        return None
    match = _ARCHIVE_PATH.search(parsed.path)
    if match is None:
        return None
    root = parse_qs(parsed.query).get("thread_ts", [""])[0]
    ts = root if _TS.match(root) else f"{match['seconds']}.{match['micros']}"
    return ThreadRef(channel=match["channel"], thread_ts=ts)


def thread_link(base_url: str, channel: str, thread_ts: str) -> str:
    """A link to a thread, in the form Slack itself produces (used by help texts and tests)."""
    return f"{base_url.rstrip('/')}/archives/{channel}/p{thread_ts.replace('.', '')}"
