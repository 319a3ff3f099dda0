"""The Web API methods the fake Slack implements, with the checks Slack makes."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gateway.sandbox.fake_slack.server import (
    BOT_ID,
    BOT_USER_ID,
    MAX_BLOCKS,
    MAX_MARKDOWN_BLOCK_CHARS,
    MAX_SECTION_CHARS,
    TEAM_ID,
    FakeState,
    SlackError,
)

if TYPE_CHECKING:
    from gateway.sandbox.fake_slack.server import FakeSlack

Method = Callable[[dict[str, Any]], dict[str, Any]]


def build(fake: FakeSlack) -> dict[str, Method]:
    state = fake.state

    def auth_test(args: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": "https://sandbox.slack.invalid/",
            "team": "Sandbox",
            "user": "threadline",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def post_message(args: dict[str, Any]) -> dict[str, Any]:
        channel = _required(args, "channel")
        _check_content(args, state)
        _check_metadata(args)
        thread_ts = args.get("thread_ts")
        with state.lock:
            if thread_ts and thread_ts not in state.messages.get(channel, {}):
                raise SlackError("thread_not_found")
            message = _bot_message(fake.next_ts(), channel, args)
            if thread_ts:
                message["thread_ts"] = thread_ts
            fake._store(message)
        return {"channel": channel, "ts": message["ts"], "message": dict(message)}

    def update(args: dict[str, Any]) -> dict[str, Any]:
        channel, ts = _required(args, "channel"), _required(args, "ts")
        _check_content(args, state)
        _check_metadata(args)
        with state.lock:
            message = fake._message(channel, ts)
            if message.get("bot_id") != BOT_ID:
                raise SlackError("cant_update_message")
            # Like Slack: fields not sent are kept (an update with text only keeps the blocks).
            message.update(_content(args))
            message["edited"] = message.get("edited", 0) + 1
        return {"channel": channel, "ts": ts, "text": message.get("text", "")}

    def delete(args: dict[str, Any]) -> dict[str, Any]:
        channel, ts = _required(args, "channel"), _required(args, "ts")
        with state.lock:
            message = fake._message(channel, ts)
            if message.get("bot_id") != BOT_ID:
                raise SlackError("cant_delete_message")
            message["deleted"] = True
        return {"channel": channel, "ts": ts}

    def post_ephemeral(args: dict[str, Any]) -> dict[str, Any]:
        channel, user = _required(args, "channel"), _required(args, "user")
        _check_content(args, state)
        ts = fake.next_ts()
        where = {"thread_ts": args["thread_ts"]} if args.get("thread_ts") else {}
        with state.lock:
            state.ephemeral.append({"channel": channel, "user": user, "ts": ts, **where, **_content(args)})
        return {"message_ts": ts}

    def replies(args: dict[str, Any]) -> dict[str, Any]:
        channel, ts = _required(args, "channel"), _required(args, "ts")
        messages = fake.thread(channel, ts)
        if not messages:
            raise SlackError("thread_not_found")
        oldest = float(args.get("oldest") or 0)
        # The parent comes first whatever `oldest` says, as in Slack.
        shown = [m for m in messages if m["ts"] == ts or float(m["ts"]) >= oldest]
        if not _truthy(args.get("include_all_metadata")):
            shown = [{k: v for k, v in m.items() if k != "metadata"} for m in shown]
        return _page(shown, args)

    def history(args: dict[str, Any]) -> dict[str, Any]:
        channel = _required(args, "channel")
        top_level = [m for m in fake.channel_messages(channel) if m.get("thread_ts") in (None, m["ts"])]
        return {"messages": list(reversed(top_level)), "has_more": False}

    def set_status(args: dict[str, Any]) -> dict[str, Any]:
        _required(args, "channel_id"), _required(args, "thread_ts")
        if "status" not in args:
            raise SlackError("invalid_arguments:status")
        with state.lock:
            state.statuses.append({k: args.get(k) for k in ("channel_id", "thread_ts", "status")})
        return {}

    def permalink(args: dict[str, Any]) -> dict[str, Any]:
        channel, ts = _required(args, "channel"), _required(args, "message_ts")
        return {"channel": channel, "permalink": f"{fake.url}/archives/{channel}/p{ts.replace('.', '')}"}

    def upload_url(args: dict[str, Any]) -> dict[str, Any]:
        file_id = "F" + uuid.uuid4().hex[:10].upper()
        with state.lock:
            state.uploads[file_id] = {
                "filename": _required(args, "filename"),
                "length": int(args.get("length", 0)),
            }
        return {"upload_url": f"{fake.url}/upload/{file_id}", "file_id": file_id}

    def complete_upload(args: dict[str, Any]) -> dict[str, Any]:
        files = args.get("files")
        files = files if isinstance(files, list) else []
        channel = args.get("channel_id")
        for item in files:
            with state.lock:
                upload = state.uploads.get(item.get("id", ""))
            if upload is None:
                raise SlackError("file_not_found")
            if channel:
                message = _bot_message(fake.next_ts(), channel, {"text": args.get("initial_comment", "")})
                title = item.get("title") or upload["filename"]
                message["files"] = [{"id": item["id"], "name": upload["filename"], "title": title}]
                if args.get("thread_ts"):
                    message["thread_ts"] = args["thread_ts"]
                fake._store(message)
        return {"files": [{"id": item.get("id")} for item in files]}

    def usergroup_users(args: dict[str, Any]) -> dict[str, Any]:
        group = args.get("usergroup")
        with state.lock:
            if group not in state.usergroups:
                raise SlackError("no_such_subteam")
            return {"users": list(state.usergroups[group])}

    def connections_open(args: dict[str, Any]) -> dict[str, Any]:
        return {"url": fake.socket_mode.url}

    return {
        "auth.test": auth_test,
        "usergroups.users.list": usergroup_users,
        "apps.connections.open": connections_open,
        "chat.postMessage": post_message,
        "chat.update": update,
        "chat.delete": delete,
        "chat.postEphemeral": post_ephemeral,
        "chat.getPermalink": permalink,
        "conversations.replies": replies,
        "conversations.history": history,
        "assistant.threads.setStatus": set_status,
        "files.getUploadURLExternal": upload_url,
        "files.completeUploadExternal": complete_upload,
    }


def _required(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not value:
        raise SlackError(
            "channel_not_found" if name in ("channel", "channel_id") else f"invalid_arguments:{name}"
        )
    return str(value)


def _content(args: dict[str, Any]) -> dict[str, Any]:
    content = {name: args[name] for name in ("text", "blocks", "markdown_text", "metadata") if name in args}
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


def _bot_message(ts: str, channel: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "ts": ts,
        "channel": channel,
        "bot_id": BOT_ID,
        "user": BOT_USER_ID,
        **_content(args),
    }


def _check_content(args: dict[str, Any], state: FakeState) -> None:
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
