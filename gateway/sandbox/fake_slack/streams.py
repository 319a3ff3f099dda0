"""chat.startStream, chat.appendStream and chat.stopStream, with Slack's checks.

A streamed message is a bot message with `streaming: True` while it is open: its text grows
with each append (`markdown_text`, or `markdown_text` chunks), its task updates are kept by id
in `tasks` (the newest status of each, in first-seen order) and its calls are counted in
`appends`. Stopping it keeps what it shows and may add blocks (shown under the streamed text,
which becomes a markdown block) and metadata. A test refuses
streaming in a channel with `SlackState.streaming_refused` ("*" for every channel); a stream
for a person of another organisation named with the wrong team is refused as Slack does.
"""

from __future__ import annotations

from typing import Any

from gateway.sandbox.fake_slack.state import (
    BOT_ID,
    BOT_USER_ID,
    MAX_MARKDOWN_BLOCK_CHARS,
    MAX_TEXT_CHARS,
    Message,
    SlackError,
    SlackState,
)

Args = dict[str, Any]
CHUNK_TYPES = frozenset({"markdown_text", "task_update", "plan_update", "blocks"})
TASK_STATUSES = frozenset({"pending", "in_progress", "complete", "error"})
DISPLAY_MODES = frozenset({"timeline", "plan"})
MAX_STREAM_CHARS = MAX_TEXT_CHARS  # a streamed message as a whole is refused past Slack's text limit


def start_stream(state: SlackState, args: Args) -> dict[str, Any]:
    channel, thread_ts = _required(args, "channel"), args.get("thread_ts")
    if not thread_ts:
        raise SlackError("invalid_arguments:thread_ts")  # a stream always answers in a thread
    if channel in state.streaming_refused or "*" in state.streaming_refused:
        raise SlackError("method_not_supported_for_channel_type")
    if channel[0] in "CG":  # streaming into a channel names who it answers
        _recipient(state, _required(args, "recipient_user_id"), _required(args, "recipient_team_id"))
    if args.get("task_display_mode", "timeline") not in DISPLAY_MODES:
        raise SlackError("invalid_arguments:task_display_mode")
    text, tasks = _content(args, required=False)
    with state.lock:
        if thread_ts not in state.messages.get(channel, {}):
            raise SlackError("thread_not_found")
        message: Message = {
            "type": "message", "ts": state.next_ts(), "channel": channel, "thread_ts": thread_ts,
            "bot_id": BOT_ID, "user": BOT_USER_ID, "text": "", "tasks": [], "streaming": True,
            "appends": 0, "task_display_mode": args.get("task_display_mode", "timeline"),
        }  # fmt: skip
        _grow(message, text, tasks)
        state.store(message)
    return {"channel": channel, "ts": message["ts"]}


def _recipient(state: SlackState, user: str, team: str) -> None:
    """A person of another organisation (Slack Connect, `add_external_user`) is found only in
    their own team: named with the host workspace, Slack answers user_not_found."""
    with state.lock:
        declared = state.users.get(user, {})
    if "team_id" in declared and declared["team_id"] != team and "enterprise_user" not in declared:
        raise SlackError("user_not_found")


def append_stream(state: SlackState, args: Args) -> dict[str, Any]:
    channel, ts = _required(args, "channel"), _required(args, "ts")
    text, tasks = _content(args, required=True)
    with state.lock:
        message = _streaming(state, channel, ts)
        _grow(message, text, tasks)
        message["appends"] += 1
    return {"channel": channel, "ts": ts}


def stop_stream(state: SlackState, args: Args) -> dict[str, Any]:
    channel, ts = _required(args, "channel"), _required(args, "ts")
    text, tasks = _content(args, required=False)
    blocks, metadata = args.get("blocks"), args.get("metadata")
    if blocks is not None and not isinstance(blocks, list):
        raise SlackError("invalid_blocks")
    if metadata is not None and not (isinstance(metadata, dict) and metadata.get("event_type")):
        raise SlackError("invalid_metadata_format")
    with state.lock:
        message = _streaming(state, channel, ts)
        _grow(message, text, tasks)
        message["streaming"] = False
        if blocks:  # shown after the streamed text, which becomes the message's first block
            streamed = [{"type": "markdown", "text": message["text"]}] if message["text"] else []
            message["blocks"] = streamed + blocks
        if metadata:
            message["metadata"] = metadata
        shown = dict(message)
    return {"channel": channel, "ts": ts, "message": shown}


def close_streams(state: SlackState) -> int:
    """Slack closes streams left idle or open too long: every open one stops as it is."""
    with state.lock:
        open_ones = [m for ms in state.messages.values() for m in ms.values() if m.get("streaming")]
        for message in open_ones:
            message["streaming"] = False
    return len(open_ones)


def _streaming(state: SlackState, channel: str, ts: str) -> Message:
    message = state.message(channel, ts)
    if message.get("bot_id") != BOT_ID:
        raise SlackError("cant_update_message")
    if not message.get("streaming"):
        raise SlackError("message_not_in_streaming_state")
    return message


def _content(args: Args, *, required: bool) -> tuple[str, list[dict[str, Any]]]:
    """The text and task updates a call adds: `markdown_text`, and/or `chunks`."""
    text = args.get("markdown_text") or ""
    if not isinstance(text, str):
        raise SlackError("invalid_arguments:markdown_text")
    tasks: list[dict[str, Any]] = []
    chunks = args.get("chunks")
    if chunks is not None:
        if not isinstance(chunks, list) or not chunks:
            raise SlackError("invalid_chunks")
        for chunk in chunks:
            text += _chunk_text(chunk, tasks)
    if required and not text and not tasks:
        raise SlackError("no_text")
    if len(text) > MAX_MARKDOWN_BLOCK_CHARS:  # one call's markdown is limited like a markdown block
        raise SlackError("msg_too_long")
    return text, tasks


def _chunk_text(chunk: Any, tasks: list[dict[str, Any]]) -> str:
    if not isinstance(chunk, dict) or chunk.get("type") not in CHUNK_TYPES:
        raise SlackError("invalid_chunks")
    if chunk["type"] == "markdown_text":
        if not isinstance(chunk.get("text"), str):
            raise SlackError("invalid_chunks")
        return str(chunk["text"])
    if chunk["type"] == "task_update":
        if not chunk.get("id") or not chunk.get("title") or chunk.get("status") not in TASK_STATUSES:
            raise SlackError("invalid_chunks")
        tasks.append({k: chunk[k] for k in ("id", "title", "status", "details", "output") if k in chunk})
    return ""


def _grow(message: Message, text: str, tasks: list[dict[str, Any]]) -> None:
    if len(message["text"]) + len(text) > MAX_STREAM_CHARS:
        raise SlackError("msg_too_long")
    message["text"] += text
    by_id = {task["id"]: task for task in message["tasks"]}
    for task in tasks:
        if task["id"] in by_id:
            by_id[task["id"]].update(task)
        else:
            message["tasks"].append(dict(task))
            by_id[task["id"]] = message["tasks"][-1]


def _required(args: Args, name: str) -> str:
    value = args.get(name)
    if not value:
        raise SlackError("channel_not_found" if name == "channel" else f"invalid_arguments:{name}")
    return str(value)
