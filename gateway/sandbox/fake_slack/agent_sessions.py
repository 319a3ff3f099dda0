"""Slack's agent surfaces in the fake: `agents.sessions.setStatus`, `agents.sessions.rename` and
the status line under a thread, `assistant.threads.setStatus`.

What Slack does, as its SDKs and the apps that call it live describe it: slack_sdk's and
@slack/web-api's typed arguments (`status` is one of active / processing / suspended / closed;
`title`, at most 200 characters, and `initiator_user_id` count only when the call creates the
session; `thread_ts` scopes the session to a thread); a value outside the enum is answered
`invalid_arguments` with "must be a valid enum value [json-pointer:/status]" in
`response_metadata.messages`; an app that is not an agent (no `agent_view` in its manifest) gets
`not_agent_app`; renaming a thread that has no session yet is `session_not_found`. The answer
carries the session's `status` and the caller's `agent_status`, and warns
`missing_agent_session_stopped_event_subscription` while the app does not subscribe to
`agent_session_stopped` (the member then sees no Stop button). Nothing moves a session out of
`processing` but the app. The status line takes `loading_messages`, "Maximum of 10 messages"
(its reference page), and records them with the status.
"""

from __future__ import annotations

from typing import Any

from gateway.sandbox.fake_slack.state import SlackError, SlackState

SESSION_STATUSES = ("active", "processing", "suspended", "closed")
MAX_TITLE_CHARS = 200
STOPPED_EVENT = "agent_session_stopped"
NO_STOP_WARNING = "missing_agent_session_stopped_event_subscription"
MAX_LOADING_MESSAGES = 10


def set_thread_status(state: SlackState, args: dict[str, Any]) -> dict[str, Any]:
    if not args.get("channel_id"):
        raise SlackError("channel_not_found")
    if not args.get("thread_ts") or "status" not in args:
        raise SlackError("invalid_arguments")
    loading = args.get("loading_messages")
    if loading is not None and not (
        isinstance(loading, list)
        and len(loading) <= MAX_LOADING_MESSAGES
        and all(isinstance(line, str) for line in loading)
    ):
        raise invalid_arguments("must have at most 10 strings [json-pointer:/loading_messages]")
    keep = ("channel_id", "thread_ts", "status", "loading_messages")
    with state.lock:
        state.statuses.append({name: args.get(name) for name in keep})
    return {}


def set_status(state: SlackState, args: dict[str, Any], subscribed: list[str]) -> dict[str, Any]:
    where = _session_of(state, args)
    status = args.get("status")
    if status not in SESSION_STATUSES:
        raise invalid_arguments("must be a valid enum value [json-pointer:/status]")
    title = args.get("title")
    if title is not None and not 0 < len(str(title)) <= MAX_TITLE_CHARS:
        raise invalid_arguments(f"must be 1 to {MAX_TITLE_CHARS} characters [json-pointer:/title]")
    with state.lock:
        session = state.agent_sessions.setdefault(
            where, {"title": title, "initiator_user_id": args.get("initiator_user_id"), "statuses": []}
        )
        session["status"] = status
        session["statuses"].append(status)
    answer: dict[str, Any] = {"status": status, "agent_status": status}
    if STOPPED_EVENT not in subscribed:
        answer["response_metadata"] = {"warnings": [NO_STOP_WARNING]}
    return answer


def rename(state: SlackState, args: dict[str, Any]) -> dict[str, Any]:
    where = _session_of(state, args)
    title = str(args.get("title") or "")
    if not 0 < len(title) <= MAX_TITLE_CHARS:
        raise invalid_arguments(f"must be 1 to {MAX_TITLE_CHARS} characters [json-pointer:/title]")
    with state.lock:
        session = state.agent_sessions.get(where)
        if session is None:
            raise SlackError("session_not_found")
        session["title"] = title
    return {}


def statuses_of(state: SlackState, channel: str, thread_ts: str) -> list[str]:
    """Every status the thread's session was set to, in order (empty: it has none)."""
    with state.lock:
        return list(state.agent_sessions.get(f"{channel}:{thread_ts}", {}).get("statuses", []))


def _session_of(state: SlackState, args: dict[str, Any]) -> str:
    if not state.agent_view:
        raise SlackError("not_agent_app")
    channel = args.get("channel_id")
    if not channel:
        raise invalid_arguments("missing required field: channel_id")
    return f"{channel}:{args.get('thread_ts') or ''}"


def invalid_arguments(message: str) -> SlackError:
    return SlackError("invalid_arguments", extra={"response_metadata": {"messages": [f"[ERROR] {message}"]}})
