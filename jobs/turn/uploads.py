"""Files shared in the thread, taken into the session's workspace at the turn that reads them.

A message's files (`UserInput.files`, noted on its Origin) are downloaded by the turn worker,
where the workspace is, into `.threadline/uploads/`; then one message of its own (origin kind
`attachments`) tells the model where each file is, or why it was not taken, and carries the
images as image parts when the model sees images (LLM_VISION). That message goes on the wire
once per shared message (its key names the message's ts), so the history says what happened.

Every part of a shared file is hostile: its name, its declared type and size, and its URL.

- The bot token goes only to Slack's files: the URL's scheme, host and port must be
  SLACK_API_URL's, or https on its files host (files.slack.com), and its path a file's,
  `/files-pri/<team>-<file>/<name>` (or `…/download/<name>`): never the Web API on the same host,
  which would take the token as well. Redirects are not followed (a redirect is a refusal).
- The name loses any directory, leading dots and control characters; a clash gets `-1`, `-2`…
  and nothing existing is overwritten (O_EXCL); directories are opened without following
  links that leave the workspace (agent.tools.workspace).
- The type must be one UPLOAD_TYPES allows; the size is counted while streaming, whatever Slack
  declared, and the download stops past UPLOAD_MAX_BYTES (what was written is removed).
- An image becomes an image part only when its first bytes say it is PNG, JPEG, GIF or WebP and
  it is at most IMAGE_PART_MAX_BYTES: it is stored on the wire and sent with every request.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import time
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from agent.messages import ContentPart, ImageURLPart, MediaURL, Message, Origin, TextPart
from agent.tools.workspace import PathSecurityError, give_fd_to_workspace_owner, open_directory
from jobs.session.user_input import FILES_FIELD, SharedFile
from jobs.settings import Settings

log = logging.getLogger(__name__)

UPLOADS = ".threadline/uploads"
ATTACHMENTS = "attachments"  # the origin kind of the message that says where the files went
FILES_PREFIX = "files."  # url_private is on files.slack.com for slack.com (files.slack-gov.com …)
# url_private(_download)'s path: /files-pri/T…-F…/name or /files-pri/T…-F…/download/name.
FILE_PATH = re.compile(r"/files-pri/[A-Za-z0-9]+-[A-Za-z0-9]+/(?:download/)?(?P<name>[^/\\]+)")
_DOT = re.compile("%2e", re.IGNORECASE)
DOWNLOAD_DEADLINE_S = 120.0  # a whole download; a server dripping bytes cannot hold a turn longer
CONNECT_TIMEOUT_S = 10.0
# An image part is base64 on the wire log and in every request after it: 2 MB (2.7 MB encoded)
# is a sharp screenshot, and keeps a session's history in Redis reasonable.
IMAGE_PART_MAX_BYTES = 2 * 1024 * 1024
MAX_NAME_BYTES = 120  # file systems allow 255; shorter names stay readable in listings
_IMAGE_MAGIC = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Saved:
    shared: SharedFile
    path: str  # workspace-relative
    size: int
    image: ImageURLPart | None = None


@dataclass(frozen=True)
class Refused:
    shared: SharedFile
    reason: str


Outcome = Saved | Refused


class Refusal(Exception):
    """Why a file was not taken; the message is shown to the model and the thread as it is."""


class FileFetcher:
    """Downloads shared files into one workspace under the settings' limits."""

    def __init__(self, settings: Settings, workspace: Path) -> None:
        self.settings = settings
        self.workspace = workspace

    def fetch_all(self, files: Iterable[SharedFile]) -> list[Outcome]:
        """One connection pool for a message's files, closed when they are done."""
        timeout = httpx.Timeout(CONNECT_TIMEOUT_S * 3, connect=CONNECT_TIMEOUT_S)
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            return [self._outcome(shared, client) for shared in files]

    def fetch(self, shared: SharedFile) -> Outcome:
        return self.fetch_all([shared])[0]

    def _outcome(self, shared: SharedFile, client: httpx.Client) -> Outcome:
        try:
            return self._fetch(shared, client)
        except Refusal as refusal:
            log.info("shared file %s (%s) refused: %s", shared.id, shared.name, refusal)
            return Refused(shared, str(refusal))
        except PathSecurityError:
            log.warning("%s: .threadline/uploads is not a plain directory; nothing saved", self.workspace)
            return Refused(shared, "the workspace's .threadline/uploads is not a plain directory (a link?)")
        except (httpx.HTTPError, OSError) as error:
            log.warning("shared file %s could not be downloaded: %s", shared.id, type(error).__name__)
            return Refused(shared, f"the download failed ({type(error).__name__}); share it again to retry")

    def _fetch(self, shared: SharedFile, client: httpx.Client) -> Saved:
        mimetype = (shared.mimetype or "application/octet-stream").lower()
        if not type_allowed(mimetype, self.settings.upload_types):
            raise Refusal(f"files of type {mimetype} are not taken here (UPLOAD_TYPES)")
        limit = self.settings.UPLOAD_MAX_BYTES
        if shared.size > limit:
            raise Refusal(f"it is {shared.size:,} bytes; the limit is {limit:,} (UPLOAD_MAX_BYTES)")
        check_url(shared.url, self.settings.SLACK_API_URL)
        if not self.settings.SLACK_BOT_TOKEN:
            raise Refusal("this worker has no SLACK_BOT_TOKEN to download it with")
        directory = open_directory(self.workspace, UPLOADS, create=True)
        try:
            name, fd = _create_unique(directory, safe_name(shared.name))
            try:
                size, head = self._download(client, shared.url, fd, keep_head=self._wants_image(mimetype))
            except BaseException:
                os.close(fd)
                os.unlink(name, dir_fd=directory)
                raise
            give_fd_to_workspace_owner(self.workspace, fd)
            os.close(fd)
        finally:
            os.close(directory)
        path = f"{UPLOADS}/{name}"
        return Saved(shared, path, size, image_part(head) if head is not None else None)

    def _wants_image(self, mimetype: str) -> bool:
        return self.settings.LLM_VISION and mimetype.startswith("image/")

    def _download(
        self, client: httpx.Client, url: str, fd: int, *, keep_head: bool
    ) -> tuple[int, bytes | None]:
        """Streams `url` into `fd`; (bytes written, the whole file when it may become an image part)."""
        limit = self.settings.UPLOAD_MAX_BYTES
        deadline = time.monotonic() + DOWNLOAD_DEADLINE_S
        headers = {"Authorization": f"Bearer {self.settings.SLACK_BOT_TOKEN}"}
        kept: bytearray | None = bytearray() if keep_head else None
        size = 0
        with client.stream("GET", url, headers=headers) as response:
            _check_response(response)
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > limit:
                    raise Refusal(f"it is over {limit:,} bytes, the limit (UPLOAD_MAX_BYTES)")
                if time.monotonic() > deadline:
                    raise Refusal(f"the download took over {DOWNLOAD_DEADLINE_S:.0f} s")
                os.write(fd, chunk)
                if kept is not None:
                    kept += chunk
                    if len(kept) > IMAGE_PART_MAX_BYTES:
                        kept = None
        return size, bytes(kept) if kept is not None else None


def _check_response(response: httpx.Response) -> None:
    if response.is_redirect:
        raise Refusal(f"Slack answered a redirect (HTTP {response.status_code}); has the app files:read?")
    if response.status_code != 200:
        raise Refusal(f"Slack answered HTTP {response.status_code}")
    if response.headers.get("content-type", "").startswith("text/html"):
        raise Refusal("Slack sent a sign-in page instead of the file; does the app have files:read?")


def check_url(url: str, api_url: str) -> None:
    """The bot token is only ever sent to a Slack file: SLACK_API_URL's origin, or https on its
    `files.` host (files.slack.com for slack.com; a fake or a proxy's own host allows no other),
    at a shared file's path (FILE_PATH), never the Web API's."""
    try:
        parts = urlsplit(url)
        origin = (parts.scheme, parts.hostname, parts.port)
    except ValueError:
        raise Refusal("Slack gave no usable address for it") from None
    api = urlsplit(api_url)
    allowed = {(api.scheme, api.hostname, api.port), ("https", f"{FILES_PREFIX}{api.hostname}", None)}
    if not url or parts.username or parts.password or origin not in allowed:
        raise Refusal(f"its address is not on Slack ({parts.hostname or 'no host'}); it was not fetched")
    if parts.query or parts.fragment or not _file_path(parts.path):
        raise Refusal("its address is not a Slack file's (/files-pri/…); it was not fetched")


def _file_path(path: str) -> bool:
    """A shared file's path, whose name is no dot segment (`..`, or `%2e%2e`, which a client
    decodes and resolves, climbing from /files-pri/ to the Web API's /api/)."""
    found = FILE_PATH.fullmatch(path)
    return found is not None and _DOT.sub(".", found["name"]) not in (".", "..")


def type_allowed(mimetype: str, allowed: frozenset[str]) -> bool:
    major = mimetype.split("/", 1)[0]
    return "*" in allowed or mimetype in allowed or f"{major}/*" in allowed


def safe_name(name: str) -> str:
    """A plain file name: no directories, no leading dots, no control or shell-special characters."""
    base = unicodedata.normalize("NFC", name).replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(ch for ch in base if ch.isprintable() and ch not in '<>:"|?*`$')
    base = base.strip().lstrip(".-").strip() or "file"
    stem, dot, extension = base.rpartition(".")
    if not dot or not stem or len(extension) > 16:
        stem, extension = base, ""
    while len((stem + "." + extension).encode()) > MAX_NAME_BYTES and len(stem) > 1:
        stem = stem[: len(stem) // 2 + len(stem) // 4]
    return f"{stem}.{extension}" if extension else stem


def _create_unique(directory: int, name: str) -> tuple[str, int]:
    """Creates `name`, else `stem-1.ext`, `stem-2.ext`…: a file already there is never opened."""
    stem, dot, extension = name.rpartition(".")
    if not dot:
        stem, extension = name, ""
    for counter in range(1000):
        candidate = name if counter == 0 else f"{stem}-{counter}{'.' + extension if extension else ''}"
        try:
            return candidate, os.open(candidate, _CREATE_FLAGS, 0o644, dir_fd=directory)
        except FileExistsError:
            continue
    raise Refusal("the uploads directory has too many files of that name")


def image_part(data: bytes) -> ImageURLPart | None:
    """A data-URL image part, when the bytes are an image providers read; None otherwise."""
    mimetype = next((kind for magic, kind in _IMAGE_MAGIC.items() if data.startswith(magic)), None)
    if mimetype is None and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        mimetype = "image/webp"
    if mimetype is None or len(data) > IMAGE_PART_MAX_BYTES:
        return None
    return ImageURLPart(image_url=MediaURL(url=f"data:{mimetype};base64,{base64.b64encode(data).decode()}"))


# -- the message that tells the model ------------------------------------------------------


def shared_files_of(message: Message) -> list[SharedFile]:
    """The files a person's message shared (its Origin's `files`), or none."""
    origin = message.origin
    raw: Any = (origin.model_extra or {}).get(FILES_FIELD) if origin is not None else None
    if message.role != "user" or not isinstance(raw, list):
        return []
    return [SharedFile.model_validate(item) for item in raw]


def message_ts(message: Message) -> str:
    origin = message.origin
    return str((origin.model_extra or {}).get("ts") or "") if origin is not None else ""


def attachments_message(message: Message, outcomes: list[Outcome], *, vision: bool) -> Message:
    """What the model reads about a message's files, images included as parts when it sees them."""
    user = (message.origin.model_extra or {}).get("user", "") if message.origin else ""
    lines = [f"Files shared with <@{user}>'s message:"]
    images: list[ContentPart] = []
    for outcome in outcomes:
        lines.append(_line(outcome, vision))
        if isinstance(outcome, Saved) and outcome.image is not None:
            images.append(outcome.image)
    origin = Origin.model_validate({"kind": ATTACHMENTS, "ts": message_ts(message), "user": user})
    return Message(role="user", content=[TextPart(text="\n".join(lines)), *images], origin=origin)


def _line(outcome: Outcome, vision: bool) -> str:
    name = outcome.shared.name
    if isinstance(outcome, Refused):
        return f"- {name}: not taken, {outcome.reason}."
    kind = outcome.shared.mimetype or "unknown type"
    line = f"- {name}: saved as `{outcome.path}` ({kind}, {outcome.size:,} bytes)"
    if outcome.image is not None:
        return line + "; the image follows."
    if kind.startswith("image/"):
        why = "it is too large or not a PNG, JPEG, GIF or WebP" if vision else "this model cannot see images"
        return line + f"; not shown as an image ({why})."
    return line + "."


def refusal_text(outcomes: list[Outcome]) -> str | None:
    """A line for the thread about the files that were not taken, or None when all were."""
    refused = [item for item in outcomes if isinstance(item, Refused)]
    if not refused:
        return None
    # The name is the sharer's text: shown in its safe form, so it cannot carry mentions or markup.
    return "\n".join(f"Not taken: `{safe_name(item.shared.name)}`: {item.reason}." for item in refused)
