"""The sandbox page: a small Slack-like web page that drives the real `web` process like Slack does.

What a person does on the page (say something in a channel, reply in a thread, click a button,
run `/agent …`) is stored in the fake Slack as Slack would store it, then sent to the web
process's `/slack/events` as a request signed with the signing secret, in Slack's shapes
(gateway.sandbox.events). What the bot does comes back through the fake Slack Web API, whose
state the page polls.

    page = SandboxPage(fake, "http://127.0.0.1:3000/slack/events", secret).start()
    print(page.url)  # http://127.0.0.1:<port>/?token=<the run's token>

JSON API: GET /api/state; POST /api/say {channel, text, thread_ts?, files?}, /api/click {channel,
message_ts, action_id, value?}, /api/command {channel, text, thread_ts?}. Every call carries the
run's token in X-Threadline-Token, and a POST is `application/json`; gateway.sandbox.page_guard
says what else is refused. Slack's response_url for clicks and commands points back here (POST
/response/<secret>/…), so those answers show as ephemeral messages where the person acted.
"""

from __future__ import annotations

import base64
import itertools
import json
import mimetypes
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import httpx

from agent.testing import LocalServer, QuietHandler
from gateway.sandbox import events
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.page_guard import PageGuard
from gateway.sandbox.signing import event_request, form_request, interaction_request

STATIC = Path(__file__).parent / "static"
FORWARD_TIMEOUT_S = 10  # Slack waits 3 s; the sandbox is patient so a slow laptop still works
# A file shared from the page travels as base64 in the JSON body: 4 MB holds a screenshot or a log.
MAX_BODY_BYTES = 4_000_000
MAX_FILES = 10  # as Slack: at most 10 files on one message
BOT_NAME = "agent"
_AT_BOT = re.compile(r"(?<![\w<])@(agent|threadline)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Channel:
    id: str
    name: str


@dataclass(frozen=True)
class Person:
    id: str
    name: str


CHANNELS = (Channel("C0GENERAL", "general"), Channel("C0RANDOM", "random"))
PERSON = Person("U0SANDBOX", "you")


class PageError(Exception):
    """A request the page cannot act on; answered with HTTP 400 and this text."""


def slack_text(typed: str) -> str:
    """What Slack's composer sends: `@agent` becomes a user mention of the bot."""
    return _AT_BOT.sub(f"<@{BOT_USER_ID}>", typed.strip())


class SandboxPage:
    def __init__(
        self,
        fake: FakeSlack,
        events_url: str,
        signing_secret: str,
        *,
        command: str = "/agent",
        host: str = "127.0.0.1",
        port: int = 0,
        person: Person = PERSON,
        channels: tuple[Channel, ...] = CHANNELS,
    ) -> None:
        self.fake = fake
        self.events_url = events_url
        self.command_name = command
        self.person = person
        self.channels = {channel.id: channel for channel in channels}
        self._secret = signing_secret
        self._http = httpx.Client(timeout=FORWARD_TIMEOUT_S)
        self._notes: list[dict[str, Any]] = []  # ephemeral answers to this person (commands, clicks)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._last_forward: dict[str, Any] = {}
        self._server = LocalServer(_handler_for(self), "sandbox-page", host, port)
        self.guard = PageGuard(self._server.address[1])

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> SandboxPage:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()
        self._http.close()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.guard.port}"

    @property
    def token(self) -> str:
        return self.guard.token

    @property
    def url(self) -> str:
        """Where a person opens the page: it carries the token the page's API calls need."""
        return f"{self.origin}/?token={self.token}"

    # -- what a person does ------------------------------------------------------------

    def say(
        self, channel: str, typed: str, thread_ts: str | None = None, files: list[Any] | None = None
    ) -> dict[str, Any]:
        """Post a message (top level, or a reply in `thread_ts`) and send Slack's events for it.
        `files` ({name, mimetype, content: base64}) are shared with it, as a `file_share`."""
        self._channel(channel)
        text = slack_text(typed)
        shared = [self._share(item) for item in _file_list(files)]
        if not text and not shared:
            raise PageError("nothing to send")
        parent = self._root(channel, thread_ts) if thread_ts else None
        message = self.fake.add_user_message(channel, text, user=self.person.id, thread_ts=thread_ts)
        if shared:
            with self.fake.state.lock:
                message.update(files=shared, subtype="file_share")
        statuses = [
            self._forward(*event_request(self._secret, event))
            for event in events.events_for(message, parent.get("user") if parent else None)
        ]
        return {"ok": all(status == 200 for status in statuses), "ts": message["ts"], "statuses": statuses}

    def _share(self, item: Any) -> dict[str, Any]:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise PageError("each file needs a name")
        try:
            content = base64.b64decode(str(item.get("content") or ""), validate=True)
        except ValueError:
            raise PageError(f"{item['name']}: content is not base64") from None
        mimetype = str(item.get("mimetype") or "") or mimetypes.guess_type(item["name"])[0] or "text/plain"
        return self.fake.share_file(item["name"], content, mimetype)

    def click(
        self, channel: str, message_ts: str, action_id: str, value: str | None = None
    ) -> dict[str, Any]:
        """Click the button `action_id` (with `value`, when several share it) on a bot message."""
        name = self._channel(channel).name
        message = next((m for m in self.fake.channel_messages(channel) if m["ts"] == message_ts), None)
        if message is None:
            raise PageError(f"no message {message_ts} in {channel}")
        found = _find_button(message, action_id, value)
        if found is None:
            raise PageError(f"no button {action_id} on message {message_ts}")
        block_id, button = found
        payload = events.block_actions(
            user=self.person.id, user_name=self.person.name, channel=channel, channel_name=name,
            message=message, action=button, block_id=block_id,
            response_url=self._response_url(channel, message.get("thread_ts") or message_ts),
        )  # fmt: skip
        status = self._forward(*interaction_request(self._secret, payload))
        return {"ok": status == 200, "statuses": [status]}

    def run_command(self, channel: str, typed: str, thread_ts: str | None = None) -> dict[str, Any]:
        """Run `/agent …`; Slack sends no thread, so the answer shows where it was typed."""
        name = self._channel(channel).name
        words = typed.strip()
        command, _, text = words.partition(" ")
        if command != self.command_name:
            raise PageError(f"unknown command {command or '(empty)'}; this app has {self.command_name}")
        fields = events.slash_command(
            command, text.strip(), user=self.person.id, user_name=self.person.name, channel=channel,
            channel_name=name, response_url=self._response_url(channel, thread_ts),
        )  # fmt: skip
        body, headers = form_request(self._secret, fields)
        response = self._post(body, headers)
        if response is not None and response.status_code == 200 and response.content:
            self._note(channel, thread_ts, _answer_of(response), by=f"{command} {text}".strip())
        status = response.status_code if response is not None else 0
        return {"ok": status == 200, "statuses": [status]}

    # -- what the page shows -----------------------------------------------------------

    def state(self) -> dict[str, Any]:
        with self.fake.state.lock:
            ephemeral = [
                {**e, "kind": "ephemeral"} for e in self.fake.state.ephemeral if e["user"] == self.person.id
            ]
            statuses = _current_statuses(self.fake.state.statuses)
        with self._lock:
            notes = list(self._notes)
            forward = dict(self._last_forward)
        return {
            "bot": {"id": BOT_USER_ID, "name": BOT_NAME},
            "person": {"id": self.person.id, "name": self.person.name},
            "command": self.command_name,
            "channels": [{"id": c.id, "name": c.name} for c in self.channels.values()],
            "messages": self.fake.all_messages(),
            "ephemeral": ephemeral + notes,
            "statuses": statuses,
            "last_forward": forward,
        }

    def take_response(self, channel: str, thread_ts: str | None, payload: dict[str, Any]) -> None:
        """A post to a response_url this page handed out: an ephemeral answer to the person."""
        text = payload.get("text") or ""
        self._note(channel, thread_ts, text, blocks=payload.get("blocks"))

    # -- internals ---------------------------------------------------------------------

    def _channel(self, channel: str) -> Channel:
        found = self.channels.get(channel)
        if found is None:
            raise PageError(f"unknown channel {channel!r}")
        return found

    def _root(self, channel: str, thread_ts: str) -> dict[str, Any]:
        root = next((m for m in self.fake.channel_messages(channel) if m["ts"] == thread_ts), None)
        if root is None:
            raise PageError(f"no thread {thread_ts} in {channel}")
        return root

    def _response_url(self, channel: str, thread_ts: str | None) -> str:
        root = thread_ts or "-"
        return f"{self.origin}/response/{self.guard.response_secret}/{channel}/{root}/{next(self._ids)}"

    def _note(
        self, channel: str, thread_ts: str | None, text: str, *, blocks: Any = None, by: str = ""
    ) -> None:
        ts = self.fake.next_ts()
        note: dict[str, Any] = {"kind": "response", "channel": channel, "ts": ts, "text": text, "by": by}
        if thread_ts:
            note["thread_ts"] = thread_ts
        if isinstance(blocks, list):
            note["blocks"] = blocks
        with self._lock:
            self._notes.append(note)

    def _forward(self, body: bytes, headers: dict[str, str]) -> int:
        response = self._post(body, headers)
        return response.status_code if response is not None else 0

    def _post(self, body: bytes, headers: dict[str, str]) -> httpx.Response | None:
        try:
            response = self._http.post(self.events_url, content=body, headers=headers)
        except httpx.HTTPError as error:
            self._remember(0, f"the web process did not answer at {self.events_url}: {error!r}")
            return None
        self._remember(response.status_code, "" if response.status_code == 200 else response.text[:300])
        return response

    def _remember(self, status: int, problem: str) -> None:
        with self._lock:
            self._last_forward = {"status": status, "problem": problem}


def _file_list(files: Any) -> list[Any]:
    if files is None:
        return []
    if not isinstance(files, list) or len(files) > MAX_FILES:
        raise PageError(f"files must be a list of at most {MAX_FILES}")
    return files


def _find_button(
    message: dict[str, Any], action_id: str, value: str | None
) -> tuple[str, dict[str, Any]] | None:
    for index, block in enumerate(message.get("blocks") or []):
        for element in block.get("elements") or []:
            if element.get("action_id") != action_id:
                continue
            for clicked in _clickable(element):
                if value is None or clicked.get("value") == value:
                    # Slack gives a block without an id one of its own, stable for the message.
                    return block.get("block_id") or f"b{index}", clicked
    return None


def _clickable(element: dict[str, Any]) -> list[dict[str, Any]]:
    """The buttons of an element: itself, or a feedback element's 👍 and 👎 (each its own value)."""
    if element.get("type") != "feedback_buttons":
        return [element]
    sides = [element.get("positive_button") or {}, element.get("negative_button") or {}]
    return [{**side, "action_id": element.get("action_id"), "type": "feedback_buttons"} for side in sides]


def _current_statuses(history: list[dict[str, Any]]) -> dict[str, str]:
    latest: dict[str, str] = {}
    for entry in history:
        status, loading = entry.get("status") or "", entry.get("loading_messages") or []
        latest[f"{entry.get('channel_id')}:{entry.get('thread_ts')}"] = (
            f"{status} · {loading[0]}" if status and loading else status
        )
    return {key: status for key, status in latest.items() if status}


def _answer_of(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text
    return body.get("text", "") if isinstance(body, dict) else str(body)


def _handler_for(page: SandboxPage) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            path = urlparse(self.path).path
            if self._refused("GET", path):
                return None
            if path == "/api/state":
                return self._json(200, page.state())
            if path == "/healthz":
                return self._json(200, {"ok": True})
            name = "index.html" if path == "/" else path.removeprefix("/static/")
            file = (STATIC / name).resolve()
            if file.parent != STATIC.resolve() or not file.is_file():
                return self._json(404, {"ok": False, "error": "not_found"})
            kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
            self._send(200, file.read_bytes(), f"{kind}; charset=utf-8")

        def do_POST(self) -> None:
            path = urlparse(self.path).path
            if self._refused("POST", path):
                return None
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                return self._json(413, {"ok": False, "error": "too large"})
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise PageError("expected a JSON object")
                return self._json(200, self._act(path, body))
            except (PageError, ValueError, KeyError) as error:
                return self._json(400, {"ok": False, "error": str(error)})

        def _act(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
            if path.startswith("/response/"):
                channel, root = [unquote(part) for part in path.split("/")[3:5]]
                page.take_response(channel, None if root == "-" else root, body)
                return {"ok": True}
            thread_ts = body.get("thread_ts") or None
            if path == "/api/say":
                return page.say(body["channel"], str(body.get("text") or ""), thread_ts, body.get("files"))
            if path == "/api/command":
                return page.run_command(body["channel"], str(body["text"]), thread_ts)
            if path == "/api/click":
                value = body.get("value")
                return page.click(body["channel"], body["message_ts"], body["action_id"], value)
            raise PageError(f"no such endpoint {path}")

        def _refused(self, method: str, path: str) -> bool:
            refusal = page.guard.refusal(method, path, self.headers)
            if refusal is None:
                return False
            self.close_connection = True  # its body, if any, is left unread
            self._json(refusal.status, {"ok": False, "error": refusal.error})
            return True

        def _json(self, status: int, body: dict[str, Any]) -> None:
            self._send(status, json.dumps(body).encode(), "application/json; charset=utf-8")

        def _send(self, status: int, data: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("Referrer-Policy", "no-referrer")  # the page's URL holds its token
            self.send_header("X-Frame-Options", "DENY")
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

    return Handler
