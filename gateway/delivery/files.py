"""Posting a file the agent sent (send_file): the workspace file, uploaded into the thread once.

Slack's external upload flow (files.getUploadURLExternal, the bytes, files.completeUploadExternal)
goes through `ThreadPoster.upload_once`, under the notice's ledger entry: a retried or
restarted delivery finds the entry (or, after a crash mid-upload, the file in the thread) and
uploads nothing again.

The file is read when it is delivered, from the session's workspace, which the agent writes
freely: it is opened the one way into the workspace (agent.tools.workspace), links followed only
while they stay inside, and must be a regular file within UPLOAD_MAX_BYTES, so a link swapped in
after the tool checked the path cannot send the worker's own files. A file that cannot be sent is said
in the thread instead.
"""

from __future__ import annotations

import logging
from pathlib import Path

from agent.tools.workspace import NotAFileOrDirectory, PathSecurityError, read_bytes
from gateway.delivery.poster import ThreadPoster
from gateway.render.notices import SlackMessage
from jobs import runtime
from jobs.session.notices import FileNotice
from jobs.turn.uploads import safe_name
from jobs.turn.workspace import workspace_path

log = logging.getLogger(__name__)

NOT_SENT = "Could not send the file `{name}`: {reason}."
TOO_LARGE = "it is now larger than {limit:,} bytes (UPLOAD_MAX_BYTES)"
GONE = "it is no longer a regular file inside the workspace"


def post_session_file(poster: ThreadPoster, entry: str, notice: FileNotice) -> None:
    """From the workspace of the poster's session, under this process's settings."""
    settings = runtime.settings()
    post_file(poster, entry, notice, workspace_path(settings, poster.key), settings.UPLOAD_MAX_BYTES)


def post_file(poster: ThreadPoster, entry: str, notice: FileNotice, workspace: Path, max_bytes: int) -> None:
    if poster.ledger.ts(entry):
        return  # sent (or said not sent) already: nothing to read
    try:
        data = read_bytes(workspace, notice.path, max_bytes)
    except (ValueError, OSError, PathSecurityError, NotAFileOrDirectory) as error:
        log.warning("%s: file %s of %s not sent: %s", poster.key, notice.path, entry, error)
        # Said in our words: the path is the agent's text and may carry markup or mentions.
        reason = TOO_LARGE.format(limit=max_bytes) if isinstance(error, ValueError) else GONE
        said = NOT_SENT.format(name=safe_name(notice.name), reason=reason)
        poster.post_once(entry, SlackMessage(text=said))
        return
    poster.upload_once(entry, notice.name, data, None, title=notice.title)
