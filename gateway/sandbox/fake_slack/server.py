"""The fake Slack's HTTP side: the Web API under /api/, response_url posts and file uploads.

Each Web API call goes through `FakeSlack.dispatch`: a scripted fault (HTTP 429 with
Retry-After, 5xx, a Slack error code, a slow answer, no answer at all) when one is due, else the method itself
(`methods.SlackMethods`) over the fake's state (`state.SlackState`); every call is logged.

    fake = FakeSlack(bot_token="xoxb-test").start()
    settings.SLACK_API_URL = fake.api_url     # http://127.0.0.1:<port>/api/
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, quote, urlparse

from agent.testing import LocalServer, QuietHandler
from gateway.manifest import BOT_EVENTS, BOT_SCOPES
from gateway.sandbox.fake_slack import agent_sessions, streams
from gateway.sandbox.fake_slack.methods import SlackMethods
from gateway.sandbox.fake_slack.state import (
    BOT_USER_ID,
    TEAM_ID,
    Call,
    Fault,
    Message,
    SlackError,
    SlackState,
)
from gateway.sandbox.fake_socket_mode import FakeSocketMode

Answer = tuple[int, dict[str, Any], dict[str, str]]  # HTTP status, JSON body, headers


class HangUp(Exception):
    """A fault that answers nothing: the connection is closed as if Slack were unreachable."""


class FakeSlack:
    def __init__(self, bot_token: str = "xoxb-test", host: str = "127.0.0.1", port: int = 0) -> None:
        self.state = SlackState(bot_token=bot_token)
        self._server = LocalServer(_handler_for(self), "fake-slack", host, port)
        self.methods = SlackMethods(
            self.state,
            base_url=self.url,
            socket_mode_url=lambda: self.socket_mode.url,
            bot_events=self._bot_events,
        )
        self._socket_mode: FakeSocketMode | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> FakeSlack:
        self._server.start()
        return self

    def stop(self) -> None:
        if self._socket_mode is not None:
            self._socket_mode.stop()
        self._server.stop()

    @property
    def socket_mode(self) -> FakeSocketMode:
        """The Socket Mode server `apps.connections.open` points at (started on first use)."""
        with self.state.lock:
            if self._socket_mode is None:
                self._socket_mode = FakeSocketMode().start()
            return self._socket_mode

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    # -- what a person sees ------------------------------------------------------------

    def thread(self, channel: str, thread_ts: str, *, include_deleted: bool = False) -> list[Message]:
        """The thread as shown: its root and replies in ts order, after edits and deletes."""
        return self.state.thread(channel, thread_ts, include_deleted=include_deleted)

    def channel_messages(self, channel: str) -> list[Message]:
        return self.state.channel_messages(channel)

    def all_messages(self) -> list[Message]:
        return self.state.all_messages()

    def calls(self, method: str | None = None) -> list[Call]:
        return self.state.calls_of(method)

    def inject(self, fault: Fault) -> None:
        with self.state.lock:
            self.state.faults.append(fault)

    def refuse_streaming(self, channel: str = "*") -> None:
        """chat.startStream answers method_not_supported_for_channel_type there ("*": everywhere)."""
        with self.state.lock:
            self.state.streaming_refused.add(channel)

    def close_streams(self) -> int:
        """Slack closes every open stream (idle or too long); returns how many were open."""
        return streams.close_streams(self.state)

    def recover(self) -> None:
        """Drop every fault still pending: Slack answers normally again."""
        self.state.clear_faults()

    def next_ts(self) -> str:
        return self.state.next_ts()

    def add_user_message(self, channel: str, text: str, user: str, thread_ts: str | None = None) -> Message:
        """Record a message a person typed (the sandbox does this before signing the event)."""
        message = {"ts": self.next_ts(), "channel": channel, "user": user, "text": text, "type": "message"}
        if thread_ts:
            message["thread_ts"] = thread_ts
        return self.state.store(message)

    def share_file(self, name: str, content: bytes, mimetype: str = "text/plain") -> dict[str, Any]:
        """A file a person shared, as a message event's `files` carries it; served with the bot
        token only, as files.slack.com serves url_private."""
        with self.state.lock:
            file_id = f"F{len(self.state.shared) + 1:08d}"
            self.state.shared[file_id] = (name, mimetype, content)
        where = f"{self.url}/files-pri/{TEAM_ID}-{file_id}"
        return {
            "id": file_id, "name": name, "title": name, "mimetype": mimetype, "size": len(content),
            "url_private": f"{where}/{quote(name, safe='')}",
            "url_private_download": f"{where}/download/{quote(name, safe='')}",
        }  # fmt: skip

    # -- who is who ----------------------------------------------------------------------

    def add_person(self, user: str, *, display_name: str = "", real_name: str = "") -> None:
        """What users.info says `user` is called (Slack's `profile.display_name`, `real_name`)."""
        with self.state.lock:
            declared = self.state.users.setdefault(user, {})
            declared["real_name"] = real_name
            declared["profile"] = {"display_name": display_name, "real_name": real_name}

    def add_guest(self, user: str, *, single_channel: bool = False) -> None:
        """`user` is a guest of the workspace (multi-channel, or single-channel)."""
        kind = "is_ultra_restricted" if single_channel else "is_restricted"
        with self.state.lock:
            self.state.users[user] = {"is_restricted": True, kind: True}

    def add_external_user(self, user: str, team: str = "T999") -> None:
        """`user` belongs to another organisation (`team`), as in a Slack Connect channel."""
        with self.state.lock:
            self.state.users[user] = {"team_id": team}

    def add_org_member(self, user: str, teams: list[str]) -> None:
        """`user` belongs to several workspaces of one organisation (Enterprise Grid), the first
        their home, as users.info says for an org-wide install."""
        enterprise = {"enterprise_id": "E111", "teams": list(teams)}
        with self.state.lock:
            self.state.users[user] = {"team_id": teams[0], "enterprise_user": enterprise}

    def set_members(self, channel: str, members: list[str]) -> None:
        """Who is in `channel` (as conversations.members answers); the bot is added."""
        with self.state.lock:
            self.state.channel_members[channel] = [*members, BOT_USER_ID]

    # -- one Web API call --------------------------------------------------------------

    def dispatch(self, method: str, args: dict[str, Any], token: str | None) -> Answer:
        fault = self.state.take_fault(method)
        if fault is not None and not fault.after_work:
            return self._fault_answer(method, args, fault)
        try:
            body = {"ok": True, **self.methods.call(method, args, token)}
        except SlackError as error:
            self.state.record_call(method, args, error.error)
            return error.status, {"ok": False, "error": error.error, **error.extra}, {}
        self.state.record_call(method, args, "ok")
        if fault is not None:
            time.sleep(fault.delay_s)
        return 200, body, {"x-oauth-scopes": ",".join(self._granted_scopes())}

    def session_statuses(self, channel: str, thread_ts: str) -> list[str]:
        """Every status the thread's agent session was set to, in order."""
        return agent_sessions.statuses_of(self.state, channel, thread_ts)

    def _bot_events(self) -> list[str]:
        events = self.state.bot_events
        return list(BOT_EVENTS) if events is None else events

    def _granted_scopes(self) -> list[str]:
        granted = self.state.granted_scopes
        return sorted(BOT_SCOPES) if granted is None else granted

    def _fault_answer(self, method: str, args: dict[str, Any], fault: Fault) -> Answer:
        if fault.delay_s:
            time.sleep(fault.delay_s)
        if fault.hang_up:
            self.state.record_call(method, args, "fault:hang_up")
            raise HangUp(method)
        headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
        error = fault.error or ("ratelimited" if fault.status == 429 else "fatal_error")
        self.state.record_call(method, args, f"fault:{fault.status}:{error}")
        return fault.status, {"ok": False, "error": error, **fault.extra}, headers


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
            self._call(path.removeprefix("/api/"), args, token)

        def do_GET(self) -> None:
            parsed = urlparse(self.path)
            if parsed.path.startswith("/api/"):
                args = dict(parse_qsl(parsed.query))
                token = _bearer(self.headers.get("Authorization")) or args.pop("token", None)
                return self._call(parsed.path.removeprefix("/api/"), args, token)
            if parsed.path.startswith("/files-pri/"):
                return self._shared_file(parsed.path.removeprefix("/files-pri/"))
            self._send(404, {"ok": False, "error": "not_found"}, {})

        def _shared_file(self, path: str) -> None:
            """url_private: the bytes with the bot token; without it, Slack's redirect to sign in."""
            file_id = path.split("/", 1)[0].removeprefix(f"{TEAM_ID}-")
            authorized = _bearer(self.headers.get("Authorization")) == fake.state.bot_token
            with fake.state.lock:
                fake.state.downloads.append((file_id, authorized))
                shared = fake.state.shared.get(file_id)
            if not authorized:
                return self._raw(302, b"", {"Location": f"{fake.url}/?redir=%2Ffiles-pri%2F{file_id}"})
            if shared is None:
                return self._raw(404, b"File not found", {"Content-Type": "text/plain"})
            self._raw(200, shared[2], {"Content-Type": shared[1]})

        def _call(self, method: str, args: dict[str, Any], token: str | None) -> None:
            try:
                status, body, headers = fake.dispatch(method, args, token)
            except HangUp:
                self.close_connection = True
                return
            self._send(status, body, headers)

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
    for name in ("blocks", "attachments", "metadata", "files", "loading_messages", "chunks"):
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
