"""A fake Slack Web API over HTTP that keeps real state and answers with Slack's error codes.

Messages live per channel by ts, with threads, edits and deletes, so a test (or the sandbox
page) sees what a person would see in the thread. Faults can be scripted per method: HTTP 429
with Retry-After, 5xx, Slack error codes, slow answers.

    fake = FakeSlack(bot_token="xoxb-test").start()
    settings.SLACK_API_URL = fake.api_url     # http://127.0.0.1:<port>/api/
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlparse

from agent.testing.local_http import LocalServer, QuietHandler

MAX_TEXT_CHARS = 40_000  # Slack truncates beyond this; we refuse, so a test notices
MAX_BLOCKS = 50
MAX_SECTION_CHARS = 3_000
MAX_MARKDOWN_BLOCK_CHARS = 12_000

BOT_USER_ID = "UBOT0001"
BOT_ID = "BBOT0001"
TEAM_ID = "T111"
APP_TOKEN = "xapp-sandbox-token"


@dataclass
class Fault:
    """Answer the next `count` calls of `method` with this instead of doing the work."""

    method: str
    count: int = 1
    status: int = 200
    error: str | None = None
    retry_after: int | None = None
    delay_s: float = 0.0
    # Do the work, then wait `delay_s` before answering (normally): a post that succeeded but
    # whose answer the caller may never read.
    after_work: bool = False


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    at: float
    outcome: str


@dataclass
class FakeState:
    bot_token: str
    messages: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # channel → ts → msg
    ephemeral: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)  # posts to response_url
    uploads: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    usergroups: dict[str, list[str]] = field(default_factory=dict)  # S… → member user ids
    uploaded: dict[str, bytes] = field(default_factory=dict)  # file id → bytes sent to upload_url
    # Slack refuses some messages as msg_too_long well below its documented limits; a test
    # can lower these to make the fake do the same.
    text_limit: int = MAX_TEXT_CHARS
    markdown_limit: int = MAX_MARKDOWN_BLOCK_CHARS
    app_token: str = APP_TOKEN
    lock: threading.RLock = field(default_factory=threading.RLock)


class SlackError(Exception):
    def __init__(self, error: str, status: int = 200) -> None:
        super().__init__(error)
        self.error = error
        self.status = status


class FakeSlack:
    def __init__(self, bot_token: str = "xoxb-test", host: str = "127.0.0.1", port: int = 0) -> None:
        self.state = FakeState(bot_token=bot_token)
        self._clock = itertools.count(1)
        self._server = LocalServer(_handler_for(self), "fake-slack", host, port)
        self.methods: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = _methods(self)
        self._socket_mode: Any = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> FakeSlack:
        self._server.start()
        return self

    def stop(self) -> None:
        if self._socket_mode is not None:
            self._socket_mode.stop()
        self._server.stop()

    @property
    def socket_mode(self) -> Any:
        """The Socket Mode server `apps.connections.open` points at (started on first use)."""
        with self.state.lock:
            if self._socket_mode is None:
                from gateway.sandbox.fake_socket_mode import FakeSocketMode

                self._socket_mode = FakeSocketMode().start()
            return self._socket_mode

    @property
    def url(self) -> str:
        host, port = self._server.address
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    # -- what a person sees ------------------------------------------------------------

    def thread(self, channel: str, thread_ts: str, *, include_deleted: bool = False) -> list[dict[str, Any]]:
        """The thread as shown: its root and replies in ts order, after edits and deletes."""
        with self.state.lock:
            messages = self.state.messages.get(channel, {}).values()
            shown = [
                dict(message)
                for message in messages
                if (message["ts"] == thread_ts or message.get("thread_ts") == thread_ts)
                and (include_deleted or not message.get("deleted"))
            ]
        return sorted(shown, key=lambda message: _ts_key(message["ts"]))

    def channel_messages(self, channel: str) -> list[dict[str, Any]]:
        with self.state.lock:
            messages = [
                dict(m) for m in self.state.messages.get(channel, {}).values() if not m.get("deleted")
            ]
        return sorted(messages, key=lambda message: _ts_key(message["ts"]))

    def all_messages(self) -> list[dict[str, Any]]:
        with self.state.lock:
            channels = list(self.state.messages)
        return [message for channel in channels for message in self.channel_messages(channel)]

    def calls(self, method: str | None = None) -> list[Call]:
        with self.state.lock:
            return [call for call in self.state.calls if method is None or call.method == method]

    def inject(self, fault: Fault) -> None:
        with self.state.lock:
            self.state.faults.append(fault)

    def add_user_message(
        self, channel: str, text: str, user: str, thread_ts: str | None = None
    ) -> dict[str, Any]:
        """Record a message a person typed (the sandbox does this before signing the event)."""
        message = {"ts": self.next_ts(), "channel": channel, "user": user, "text": text, "type": "message"}
        if thread_ts:
            message["thread_ts"] = thread_ts
        return self._store(message)

    # -- internals used by the methods -------------------------------------------------

    def next_ts(self) -> str:
        return f"{int(time.time())}.{next(self._clock):06d}"

    def _store(self, message: dict[str, Any]) -> dict[str, Any]:
        with self.state.lock:
            self.state.messages.setdefault(message["channel"], {})[message["ts"]] = message
            root = message.get("thread_ts")
            if root and root != message["ts"]:
                parent = self.state.messages[message["channel"]].get(root)
                if parent is not None:
                    parent["reply_count"] = parent.get("reply_count", 0) + 1
        return message

    def _message(self, channel: str, ts: str) -> dict[str, Any]:
        message = self.state.messages.get(channel, {}).get(ts)
        if message is None or message.get("deleted"):
            raise SlackError("message_not_found")
        return message

    def _take_fault(self, method: str) -> Fault | None:
        with self.state.lock:
            for fault in self.state.faults:
                if fault.method in (method, "*") and fault.count > 0:
                    fault.count -= 1
                    return fault
        return None

    def dispatch(
        self, method: str, args: dict[str, Any], token: str | None
    ) -> tuple[int, dict[str, Any], dict]:
        fault = self._take_fault(method)
        if fault is not None and not fault.after_work:
            return self._fault_answer(method, args, fault)
        try:
            _check_token(method, token, self.state)
            handler = self.methods.get(method)
            if handler is None:
                raise SlackError("unknown_method")
            body = {"ok": True, **handler(args)}
        except SlackError as error:
            self._log(method, args, error.error)
            return error.status, {"ok": False, "error": error.error}, {}
        self._log(method, args, "ok")
        if fault is not None:
            time.sleep(fault.delay_s)
        return 200, body, {}

    def _fault_answer(self, method: str, args: dict[str, Any], fault: Fault) -> tuple[int, dict, dict]:
        if fault.delay_s:
            time.sleep(fault.delay_s)
        headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
        error = fault.error or ("ratelimited" if fault.status == 429 else "fatal_error")
        self._log(method, args, f"fault:{fault.status}:{error}")
        return fault.status, {"ok": False, "error": error}, headers

    def _log(self, method: str, args: dict[str, Any], outcome: str) -> None:
        with self.state.lock:
            self.state.calls.append(Call(method=method, args=args, at=time.time(), outcome=outcome))


APP_TOKEN_METHODS = frozenset({"apps.connections.open"})


def _check_token(method: str, token: str | None, state: FakeState) -> None:
    """Slack's token rules: app-level methods take the xapp token, everything else the bot's."""
    if method == "api.test":
        return
    expected = state.app_token if method in APP_TOKEN_METHODS else state.bot_token
    if token == expected:
        return
    if token in (state.app_token, state.bot_token):
        raise SlackError("not_allowed_token_type")
    raise SlackError("invalid_auth")


def _ts_key(ts: str) -> tuple[int, int]:
    seconds, _, fraction = ts.partition(".")
    return int(seconds), int(fraction or 0)


def _methods(fake: FakeSlack) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
    from gateway.sandbox.fake_slack import methods as fake_slack_methods

    return fake_slack_methods.build(fake)


def _handler_for(fake: FakeSlack) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_POST(self) -> None:
            path = urlparse(self.path).path
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if path.startswith("/response/"):
                return self._response_url(path, raw)
            if path.startswith("/upload/"):
                return self._upload(path.removeprefix("/upload/"), raw)
            if not path.startswith("/api/"):
                return self._send(404, {"ok": False, "error": "not_found"}, {})
            try:
                args = _parse_args(self.headers.get("Content-Type", ""), raw, urlparse(self.path).query)
            except SlackError as error:
                return self._send(200, {"ok": False, "error": error.error}, {})
            token = _bearer(self.headers.get("Authorization")) or args.pop("token", None)
            status, body, headers = fake.dispatch(path.removeprefix("/api/"), args, token)
            self._send(status, body, headers)

        def do_GET(self) -> None:
            parsed = urlparse(self.path)
            if parsed.path.startswith("/api/"):
                args = dict(parse_qsl(parsed.query))
                token = _bearer(self.headers.get("Authorization")) or args.pop("token", None)
                status, body, headers = fake.dispatch(parsed.path.removeprefix("/api/"), args, token)
                return self._send(status, body, headers)
            self._send(404, {"ok": False, "error": "not_found"}, {})

        def _response_url(self, path: str, raw: bytes) -> None:
            try:
                payload = json.loads(raw or b"{}")
            except ValueError:
                return self._send(400, {"ok": False, "error": "invalid_payload"}, {})
            with fake.state.lock:
                fake.state.responses.append({"path": path, **payload})
            self._send(200, {"ok": True}, {})

        def _upload(self, file_id: str, raw: bytes) -> None:
            with fake.state.lock:
                known = file_id in fake.state.uploads
                if known:
                    fake.state.uploaded[file_id] = raw
            data = f"OK - {len(raw)}".encode() if known else b"file not found"
            self.send_response(200 if known else 404)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _parse_args(content_type: str, raw: bytes, query: str) -> dict[str, Any]:
    args: dict[str, Any] = dict(parse_qsl(query))
    if "application/json" in content_type:
        args.update(json.loads(raw or b"{}"))
    elif raw and "multipart/form-data" not in content_type:
        args.update(parse_qsl(raw.decode()))
    for name in ("blocks", "attachments", "metadata", "files", "loading_messages"):
        if isinstance(args.get(name), str):
            try:
                args[name] = json.loads(args[name])
            except ValueError:
                raise SlackError(f"invalid_{name}") from None
    return args


def _bearer(header: str | None) -> str | None:
    if header and header.startswith("Bearer "):
        return header.removeprefix("Bearer ")
    return None
