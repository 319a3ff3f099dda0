"""The Web API methods the fake Slack implements, with the checks Slack makes.

`SlackMethods` answers one call by its Slack name over a `SlackState`; the HTTP side
(`server.FakeSlack`) adds tokens' transport, faults and the call log around it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

from gateway.sandbox.fake_slack import agent_sessions, streams
from gateway.sandbox.fake_slack.state import (
    BOT_ID,
    BOT_USER_ID,
    DEFAULT_MEMBERS,
    MAX_BLOCKS,
    MAX_MARKDOWN_BLOCK_CHARS,
    MAX_SECTION_CHARS,
    TEAM_ID,
    Message,
    SlackError,
    SlackState,
)

Args = dict[str, Any]
Answer = dict[str, Any]
Method = Callable[[Args], Answer]

APP_TOKEN_METHODS = frozenset({"apps.connections.open"})
USER_ID = re.compile(r"^[UW][A-Z0-9]+$")
EMOJI_NAME = re.compile(r"^[a-z0-9_+\-']+$")
MAX_MEMBERS_PAGE = 1000  # conversations.members takes a limit under 1000
DEFAULT_MEMBERS_PAGE = 100


class SlackMethods:
    """The methods threadline calls. `base_url` is where the fake serves (permalinks, uploads);
    `socket_mode_url` starts the Socket Mode server on first use and says where it listens."""

    def __init__(
        self,
        state: SlackState,
        *,
        base_url: str,
        socket_mode_url: Callable[[], str],
        bot_events: Callable[[], list[str]],
    ) -> None:
        self.state = state
        self.bot_events = bot_events
        self.base_url = base_url
        self.socket_mode_url = socket_mode_url
        self._by_name: dict[str, Method] = {
            "auth.test": self.auth_test,
            "usergroups.users.list": self.usergroup_users,
            "users.info": self.user_info,
            "conversations.members": self.members,
            "apps.connections.open": self.connections_open,
            "chat.postMessage": self.post_message,
            "chat.update": self.update,
            "chat.startStream": lambda args: streams.start_stream(self.state, args),
            "chat.appendStream": lambda args: streams.append_stream(self.state, args),
            "chat.stopStream": lambda args: streams.stop_stream(self.state, args),
            "chat.delete": self.delete,
            "chat.postEphemeral": self.post_ephemeral,
            "chat.getPermalink": self.permalink,
            "conversations.replies": self.replies,
            "conversations.history": self.history,
            "assistant.threads.setStatus": lambda args: agent_sessions.set_thread_status(state, args),
            "agents.sessions.setStatus": lambda args: agent_sessions.set_status(state, args, bot_events()),
            "agents.sessions.rename": lambda args: agent_sessions.rename(state, args),
            "reactions.add": self.react,
            "reactions.remove": self.unreact,
            "files.getUploadURLExternal": self.upload_url,
            "files.completeUploadExternal": self.complete_upload,
        }

    def call(self, name: str, args: Args, token: str | None) -> Answer:
        """Run method `name` as Slack would, after its token check; SlackError when Slack refuses."""
        self.check_token(name, token)
        method = self._by_name.get(name)
        if method is None:
            raise SlackError("unknown_method")
        return method(args)

    def check_token(self, name: str, token: str | None) -> None:
        """Slack's token rules: app-level methods take the xapp token, everything else the bot's."""
        if name == "api.test":
            return
        expected = self.state.app_token if name in APP_TOKEN_METHODS else self.state.bot_token
        if token == expected:
            return
        if token in (self.state.app_token, self.state.bot_token):
            raise SlackError("not_allowed_token_type")
        raise SlackError("invalid_auth")

    # -- workspace ---------------------------------------------------------------------

    def auth_test(self, args: Args) -> Answer:
        return {
            "url": "https://sandbox.slack.invalid/",
            "team": "Sandbox",
            "user": "threadline",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def usergroup_users(self, args: Args) -> Answer:
        group = args.get("usergroup")
        with self.state.lock:
            if group not in self.state.usergroups:
                raise SlackError("no_such_subteam")
            return {"users": list(self.state.usergroups[group])}

    def user_info(self, args: Args) -> Answer:
        """A full member of TEAM_ID unless the test declared otherwise (a guest, another org's user)."""
        user = str(args.get("user") or "")
        if not USER_ID.match(user):
            raise SlackError("user_not_found")
        with self.state.lock:
            declared = dict(self.state.users.get(user, {}))
        fields = {"is_restricted": False, "is_ultra_restricted": False, "team_id": TEAM_ID, **declared}
        # Slack's name fields: `profile.display_name` (often empty), `profile.real_name` and
        # `real_name` (the same), `name` (the username); a test declares them (add_person).
        profile = {
            "display_name": "",
            "real_name": declared.get("real_name", ""),
            **declared.get("profile", {}),
        }
        fields["profile"] = profile
        return {"user": {"id": user, "name": user.lower(), "deleted": False, "is_bot": False, **fields}}

    def members(self, args: Args) -> Answer:
        """A channel's member ids, a page at a time (cursor = the offset, as an opaque string)."""
        channel = _required(args, "channel")
        limit = int(args.get("limit") or DEFAULT_MEMBERS_PAGE)
        if not 0 < limit < MAX_MEMBERS_PAGE:
            raise SlackError("invalid_limit")
        cursor = str(args.get("cursor") or "0")
        if not cursor.isdigit():
            raise SlackError("invalid_cursor")
        with self.state.lock:
            everyone = list(self.state.channel_members.get(channel, DEFAULT_MEMBERS))
        start = int(cursor)
        more = start + limit < len(everyone)
        next_cursor = str(start + limit) if more else ""
        return {"members": everyone[start : start + limit], "response_metadata": {"next_cursor": next_cursor}}

    def connections_open(self, args: Args) -> Answer:
        return {"url": self.socket_mode_url()}

    # -- chat ----------------------------------------------------------------------------

    def post_message(self, args: Args) -> Answer:
        channel = _required(args, "channel")
        _check_content(args, self.state)
        _check_metadata(args)
        thread_ts = args.get("thread_ts")
        with self.state.lock:
            if thread_ts and thread_ts not in self.state.messages.get(channel, {}):
                raise SlackError("thread_not_found")
            message = _bot_message(self.state.next_ts(), channel, args)
            if thread_ts:
                message["thread_ts"] = thread_ts
            self.state.store(message)
        return {"channel": channel, "ts": message["ts"], "message": dict(message)}

    def update(self, args: Args) -> Answer:
        channel, ts = _required(args, "channel"), _required(args, "ts")
        _check_content(args, self.state)
        _check_metadata(args)
        with self.state.lock:
            message = self.state.message(channel, ts)
            if message.get("bot_id") != BOT_ID:
                raise SlackError("cant_update_message")
            # Like Slack: fields not sent are kept (an update with text only keeps the blocks).
            message.update(_content(args))
            message["edited"] = message.get("edited", 0) + 1
        return {"channel": channel, "ts": ts, "text": message.get("text", "")}

    def delete(self, args: Args) -> Answer:
        channel, ts = _required(args, "channel"), _required(args, "ts")
        with self.state.lock:
            message = self.state.message(channel, ts)
            if message.get("bot_id") != BOT_ID:
                raise SlackError("cant_delete_message")
            message["deleted"] = True
        return {"channel": channel, "ts": ts}

    def post_ephemeral(self, args: Args) -> Answer:
        channel, user = _required(args, "channel"), _required(args, "user")
        _check_content(args, self.state)
        ts = self.state.next_ts()
        where = {"thread_ts": args["thread_ts"]} if args.get("thread_ts") else {}
        with self.state.lock:
            self.state.ephemeral.append(
                {"channel": channel, "user": user, "ts": ts, **where, **_content(args)}
            )
        return {"message_ts": ts}

    def permalink(self, args: Args) -> Answer:
        channel, ts = _required(args, "channel"), _required(args, "message_ts")
        return {"channel": channel, "permalink": f"{self.base_url}/archives/{channel}/p{ts.replace('.', '')}"}

    # -- conversations and status ------------------------------------------------------

    def replies(self, args: Args) -> Answer:
        channel, ts = _required(args, "channel"), _required(args, "ts")
        messages = self.state.thread(channel, ts)
        if not messages:
            raise SlackError("thread_not_found")
        oldest = float(args.get("oldest") or 0)
        # The parent comes first whatever `oldest` says, as in Slack; `latest` bounds the rest
        # (excluded unless `inclusive`, Slack's default).
        latest = float(args.get("latest") or "inf")
        inclusive = _truthy(args.get("inclusive"))
        shown = [m for m in messages if m["ts"] == ts or oldest <= float(m["ts"]) < latest]
        if inclusive:
            shown += [m for m in messages if m["ts"] != ts and float(m["ts"]) == latest]
        if not _truthy(args.get("include_all_metadata")):
            shown = [{k: v for k, v in m.items() if k != "metadata"} for m in shown]
        return _page(shown, args)

    def history(self, args: Args) -> Answer:
        channel = _required(args, "channel")
        messages = self.state.channel_messages(channel)
        top_level = [m for m in messages if m.get("thread_ts") in (None, m["ts"])]
        return {"messages": list(reversed(top_level)), "has_more": False}

    # -- reactions -----------------------------------------------------------------------

    def react(self, args: Args) -> Answer:
        """Slack's shape: `reactions` on the message, each with its name, users and count."""
        with self.state.lock:
            message, name, existing = self._reaction(args)
            if existing is None:
                message.setdefault("reactions", []).append({"name": name, "users": [BOT_USER_ID], "count": 1})
            elif BOT_USER_ID in existing["users"]:
                raise SlackError("already_reacted")
            else:
                existing["users"].append(BOT_USER_ID)
                existing["count"] += 1
        return {}

    def unreact(self, args: Args) -> Answer:
        with self.state.lock:
            message, _, existing = self._reaction(args)
            if existing is None or BOT_USER_ID not in existing["users"]:
                raise SlackError("no_reaction")
            existing["users"].remove(BOT_USER_ID)
            existing["count"] -= 1
            kept = [r for r in message["reactions"] if r["count"] > 0]
            if kept:
                message["reactions"] = kept
            else:
                message.pop("reactions")
        return {}

    def _reaction(self, args: Args) -> tuple[dict[str, Any], str, dict[str, Any] | None]:
        """The message a reaction call names, the emoji, and that emoji's reaction on it if any."""
        name, channel, ts = _reaction_args(args)
        message = self._message(channel, ts)
        existing = next((r for r in message.get("reactions", []) if r["name"] == name), None)
        return message, name, existing

    def _message(self, channel: str, ts: str) -> dict[str, Any]:
        message = self.state.messages.get(channel, {}).get(ts)
        if message is None:
            raise SlackError("message_not_found")
        return message

    # -- files ---------------------------------------------------------------------------

    def upload_url(self, args: Args) -> Answer:
        file_id = "F" + uuid.uuid4().hex[:10].upper()
        with self.state.lock:
            self.state.uploads[file_id] = {
                "filename": _required(args, "filename"),
                "length": int(args.get("length", 0)),
            }
        return {"upload_url": f"{self.base_url}/upload/{file_id}", "file_id": file_id}

    def complete_upload(self, args: Args) -> Answer:
        files = args.get("files")
        files = files if isinstance(files, list) else []
        channel = args.get("channel_id")
        for item in files:
            with self.state.lock:
                upload = self.state.uploads.get(item.get("id", ""))
            if upload is None:
                raise SlackError("file_not_found")
            if channel:
                self.state.store(_file_message(self.state.next_ts(), channel, args, item, upload))
        return {"files": [{"id": item.get("id")} for item in files]}


def _file_message(ts: str, channel: str, args: Args, item: dict[str, Any], upload: dict[str, Any]) -> Message:
    message = _bot_message(ts, channel, {"text": args.get("initial_comment", "")})
    title = item.get("title") or upload["filename"]
    message["files"] = [{"id": item["id"], "name": upload["filename"], "title": title}]
    if args.get("thread_ts"):
        message["thread_ts"] = args["thread_ts"]
    return message


def _reaction_args(args: Args) -> tuple[str, str, str]:
    channel, ts, name = _required(args, "channel"), _required(args, "timestamp"), _required(args, "name")
    if not EMOJI_NAME.match(name):
        raise SlackError("invalid_name")
    return name, channel, ts


def _required(args: Args, name: str) -> str:
    value = args.get(name)
    if not value:
        raise SlackError(
            "channel_not_found" if name in ("channel", "channel_id") else f"invalid_arguments:{name}"
        )
    return str(value)


def _content(args: Args) -> dict[str, Any]:
    content: dict[str, Any] = {
        name: args[name] for name in ("text", "blocks", "markdown_text", "metadata") if name in args
    }
    if "markdown_text" in content:  # what clients show of it, and what the history API returns
        content["text"] = content["markdown_text"]
    return content


def _truthy(value: Any) -> bool:
    return value in (True, 1) or str(value).lower() in ("true", "1")


def _page(messages: list[dict[str, Any]], args: dict[str, Any]) -> dict[str, Any]:
    limit = max(1, min(1000, int(args.get("limit") or 1000)))
    start = int(args.get("cursor") or 0)
    page = messages[start : start + limit]
    more = start + limit < len(messages)
    return {
        "messages": page,
        "has_more": more,
        "response_metadata": {"next_cursor": str(start + limit) if more else ""},
    }


def _check_metadata(args: dict[str, Any]) -> None:
    metadata = args.get("metadata")
    if metadata is None:
        return
    event_type = metadata.get("event_type") if isinstance(metadata, dict) else None
    payload = metadata.get("event_payload") if isinstance(metadata, dict) else None
    if not isinstance(event_type, str) or not event_type or not isinstance(payload, dict):
        raise SlackError("invalid_metadata_format")


def _bot_message(ts: str, channel: str, args: Args) -> Message:
    return {
        "type": "message",
        "ts": ts,
        "channel": channel,
        "bot_id": BOT_ID,
        "user": BOT_USER_ID,
        **_content(args),
    }


def _check_content(args: Args, state: SlackState) -> None:
    text, blocks, markdown = args.get("text"), args.get("blocks"), args.get("markdown_text")
    if not text and not blocks and not markdown:
        raise SlackError("no_text")
    if markdown and (text or blocks):
        raise SlackError("markdown_text_conflict")
    if len(text or "") > state.text_limit or len(markdown or "") > state.markdown_limit:
        raise SlackError("msg_too_long")
    if blocks is not None:
        _check_blocks(blocks)


def _check_blocks(blocks: Any) -> None:
    if not isinstance(blocks, list) or len(blocks) > MAX_BLOCKS:
        raise SlackError("invalid_blocks")
    markdown = sum(
        len(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "markdown"
    )
    if markdown > MAX_MARKDOWN_BLOCK_CHARS:  # the limit is for all markdown blocks of a message together
        raise SlackError("msg_blocks_too_long")
    for block in blocks:
        if not isinstance(block, dict) or "type" not in block:
            raise SlackError("invalid_blocks")
        if block["type"] == "section" and len((block.get("text") or {}).get("text", "")) > MAX_SECTION_CHARS:
            raise SlackError("invalid_blocks")
        if block["type"] == "markdown" and len(block.get("text", "")) > MAX_MARKDOWN_BLOCK_CHARS:
            raise SlackError("invalid_blocks")
