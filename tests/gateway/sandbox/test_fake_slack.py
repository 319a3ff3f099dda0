"""The fake Slack keeps behaving like Slack for the methods threadline uses: real error codes,
limits, token rules, metadata and pagination, uploads."""

from __future__ import annotations

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from gateway.sandbox.fake_slack import APP_TOKEN, BOT_USER_ID, FakeSlack, Fault
from gateway.sandbox.stack import BOT_TOKEN


@pytest.fixture
def client(fake_slack: FakeSlack) -> WebClient:
    return WebClient(token=BOT_TOKEN, base_url=fake_slack.api_url)


def error_of(call) -> str:
    with pytest.raises(SlackApiError) as raised:
        call()
    return raised.value.response["error"]


def thread(fake_slack: FakeSlack) -> str:
    return fake_slack.add_user_message("C1", "root", user="U1")["ts"]


def test_metadata_comes_back_only_when_asked_for(fake_slack, client):
    root = thread(fake_slack)
    meta = {"event_type": "threadline_notice", "event_payload": {"outbox_id": "1-0"}}
    client.chat_postMessage(channel="C1", thread_ts=root, text="x", metadata=meta)
    plain = client.conversations_replies(channel="C1", ts=root)["messages"]
    full = client.conversations_replies(channel="C1", ts=root, include_all_metadata=True)["messages"]
    assert "metadata" not in plain[1] and full[1]["metadata"] == meta
    assert error_of(lambda: client.chat_postMessage(channel="C1", text="x", metadata={"x": 1})) == (
        "invalid_metadata_format"
    )


def test_replies_are_paginated_with_a_cursor(fake_slack, client):
    root = thread(fake_slack)
    for index in range(5):
        client.chat_postMessage(channel="C1", thread_ts=root, text=f"m{index}")
    first = client.conversations_replies(channel="C1", ts=root, limit=4)
    assert first["has_more"] and len(first["messages"]) == 4
    rest = client.conversations_replies(
        channel="C1", ts=root, limit=4, cursor=first["response_metadata"]["next_cursor"]
    )
    assert [m["text"] for m in rest["messages"]] == ["m3", "m4"] and not rest["has_more"]


def test_replies_stop_before_latest_unless_inclusive_and_the_parent_always_comes(fake_slack, client):
    root = thread(fake_slack)
    ts = [client.chat_postMessage(channel="C1", thread_ts=root, text=f"m{i}")["ts"] for i in range(3)]
    before = client.conversations_replies(channel="C1", ts=root, latest=ts[1])["messages"]
    upto = client.conversations_replies(channel="C1", ts=root, latest=ts[1], inclusive=True)["messages"]
    assert [m["text"] for m in before] == ["root", "m0"] and [m["text"] for m in upto] == ["root", "m0", "m1"]


def test_users_info_gives_the_names_a_test_declares_in_slacks_fields(fake_slack, client):
    fake_slack.add_person("U2", display_name="dana", real_name="Dana Ito")
    named, unnamed = client.users_info(user="U2")["user"], client.users_info(user="U3")["user"]
    assert named["profile"] == {"display_name": "dana", "real_name": "Dana Ito"}
    assert named["real_name"] == "Dana Ito" and named["name"] == "u2"
    assert unnamed["profile"] == {"display_name": "", "real_name": ""}


def test_content_limits_and_conflicts_use_slacks_error_codes(fake_slack, client):
    fake_slack.state.text_limit = 100
    assert error_of(lambda: client.chat_postMessage(channel="C1", text="x" * 101)) == "msg_too_long"
    assert error_of(lambda: client.chat_postMessage(channel="C1", text="a", markdown_text="b")) == (
        "markdown_text_conflict"
    )
    many = [{"type": "divider"}] * 51
    assert error_of(lambda: client.chat_postMessage(channel="C1", text="a", blocks=many)) == "invalid_blocks"
    long_section = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]
    assert (
        error_of(lambda: client.chat_postMessage(channel="C1", text="a", blocks=long_section))
        == "invalid_blocks"
    )
    markdown = [{"type": "markdown", "text": "x" * 7000}] * 2
    assert (
        error_of(lambda: client.chat_postMessage(channel="C1", text="a", blocks=markdown))
        == "msg_blocks_too_long"
    )
    assert error_of(lambda: client.chat_postMessage(channel="C1")) == "no_text"


def test_an_update_with_text_only_keeps_the_blocks(fake_slack, client):
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "card"}}]
    ts = client.chat_postMessage(channel="C1", text="t", blocks=blocks)["ts"]
    client.chat_update(channel="C1", ts=ts, text="new")
    message = fake_slack.channel_messages("C1")[-1]
    assert message["text"] == "new" and message["blocks"] == blocks and message["edited"] == 1
    assert error_of(lambda: client.chat_update(channel="C1", ts="1.1", text="x")) == "message_not_found"


def test_app_level_methods_take_the_app_token_and_nothing_else(fake_slack, client):
    assert error_of(lambda: client.apps_connections_open(app_token=BOT_TOKEN)) == "not_allowed_token_type"
    opened = client.apps_connections_open(app_token=APP_TOKEN)
    assert opened["url"].startswith("ws://127.0.0.1:")
    assert (
        error_of(lambda: WebClient(token="xoxb-wrong", base_url=fake_slack.api_url).auth_test())
        == "invalid_auth"
    )


def test_files_upload_v2_posts_the_file_in_the_thread(fake_slack, client):
    root = thread(fake_slack)
    client.files_upload_v2(
        channel="C1", thread_ts=root, content="hello", filename="a.md", initial_comment="see"
    )
    message = fake_slack.thread("C1", root)[-1]
    assert message["text"] == "see" and message["files"][0]["name"] == "a.md"
    assert fake_slack.state.uploaded[message["files"][0]["id"]] == b"hello"


def test_user_groups_and_rate_limits(fake_slack, client):
    fake_slack.state.usergroups["S1"] = ["U1"]
    assert client.usergroups_users_list(usergroup="S1")["users"] == ["U1"]
    assert error_of(lambda: client.usergroups_users_list(usergroup="S2")) == "no_such_subteam"
    fake_slack.inject(Fault("chat.postMessage", status=429, retry_after=7))
    with pytest.raises(SlackApiError) as raised:
        client.chat_postMessage(channel="C1", text="x")
    assert raised.value.response.status_code == 429 and raised.value.response.headers["Retry-After"] == "7"


def test_users_info_tells_members_guests_and_other_organisations_apart(fake_slack, client):
    fake_slack.add_guest("W5")
    fake_slack.add_guest("W6", single_channel=True)
    fake_slack.add_external_user("W7", team="T999")
    users = {u: client.users_info(user=u)["user"] for u in ("W1", "W5", "W6", "W7")}
    assert [(u["is_restricted"], u["is_ultra_restricted"], u["team_id"]) for u in users.values()] == [
        (False, False, "T111"),
        (True, False, "T111"),
        (True, True, "T111"),
        (False, False, "T999"),
    ]
    assert error_of(lambda: client.users_info(user="C1")) == "user_not_found"
    fake_slack.add_org_member("W8", ["T111", "T222"])
    assert client.users_info(user="W8")["user"]["enterprise_user"]["teams"] == ["T111", "T222"]


def test_channel_members_come_a_page_at_a_time(fake_slack, client):
    fake_slack.set_members("C9", [f"W{n:04d}" for n in range(250)])
    first = client.conversations_members(channel="C9", limit=200)
    cursor = first["response_metadata"]["next_cursor"]
    rest = client.conversations_members(channel="C9", limit=200, cursor=cursor)
    assert len(first["members"]) == 200 and rest["response_metadata"]["next_cursor"] == ""
    assert rest["members"][-1] == "UBOT0001" and len(rest["members"]) == 51  # the bot is a member
    assert "W222" in client.conversations_members(channel="C1")["members"]  # undeclared: the usual people
    assert error_of(lambda: client.conversations_members(channel="C9", limit=1000)) == "invalid_limit"
    assert error_of(lambda: client.conversations_members(channel="")) == "channel_not_found"


def test_reactions_keep_slacks_shape_and_error_codes(fake_slack, client):
    ts = thread(fake_slack)
    client.reactions_add(channel="C1", timestamp=ts, name="eyes")
    [message] = [m for m in fake_slack.thread("C1", ts) if m["ts"] == ts]
    assert message["reactions"] == [{"name": "eyes", "users": [BOT_USER_ID], "count": 1}]
    assert (
        error_of(lambda: client.reactions_add(channel="C1", timestamp=ts, name="eyes")) == "already_reacted"
    )
    assert error_of(lambda: client.reactions_add(channel="C1", timestamp="1.2", name="eyes")) == (
        "message_not_found"
    )
    assert (
        error_of(lambda: client.reactions_add(channel="C1", timestamp=ts, name="no such!")) == "invalid_name"
    )
    client.reactions_remove(channel="C1", timestamp=ts, name="eyes")
    assert "reactions" not in next(m for m in fake_slack.thread("C1", ts) if m["ts"] == ts)
    assert error_of(lambda: client.reactions_remove(channel="C1", timestamp=ts, name="eyes")) == "no_reaction"


def test_agent_sessions_take_slacks_statuses_and_answer_with_its_error_codes(fake_slack, client):
    root = thread(fake_slack)
    assert error_of(lambda: client.agents_sessions_rename(channel_id="C1", thread_ts=root, title="t")) == (
        "session_not_found"
    )
    with pytest.raises(SlackApiError) as raised:
        client.agents_sessions_setStatus(channel_id="C1", thread_ts=root, status="is thinking…")
    assert raised.value.response["error"] == "invalid_arguments"
    assert "json-pointer:/status" in raised.value.response["response_metadata"]["messages"][0]
    too_long = "t" * 201
    assert (
        error_of(
            lambda: client.agents_sessions_setStatus(
                channel_id="C1", thread_ts=root, status="processing", title=too_long
            )
        )
        == "invalid_arguments"
    )
    answer = client.agents_sessions_setStatus(
        channel_id="C1", thread_ts=root, status="processing", title="Fix it"
    )
    assert answer["agent_status"] == "processing" and "response_metadata" not in answer.data
    client.agents_sessions_rename(channel_id="C1", thread_ts=root, title="Renamed")
    client.agents_sessions_setStatus(channel_id="C1", thread_ts=root, status="active", title="ignored")
    assert fake_slack.session_statuses("C1", root) == ["processing", "active"]
    assert fake_slack.state.agent_sessions[f"C1:{root}"]["title"] == "Renamed"


def test_an_app_that_is_not_an_agent_or_lacks_the_stop_event_hears_so(fake_slack, client):
    root = thread(fake_slack)
    fake_slack.state.bot_events = ["app_mention"]
    warned = client.agents_sessions_setStatus(channel_id="C1", thread_ts=root, status="processing")
    assert warned["response_metadata"]["warnings"] == ["missing_agent_session_stopped_event_subscription"]
    fake_slack.state.agent_view = False
    assert (
        error_of(lambda: client.agents_sessions_setStatus(channel_id="C1", thread_ts=root, status="active"))
        == "not_agent_app"
    )


def test_the_status_line_takes_at_most_ten_loading_messages(fake_slack, client):
    root = thread(fake_slack)
    eleven = [f"step {i}" for i in range(11)]
    set_status = client.assistant_threads_setStatus
    assert (
        error_of(
            lambda: set_status(channel_id="C1", thread_ts=root, status="is working…", loading_messages=eleven)
        )
        == "invalid_arguments"
    )
    set_status(channel_id="C1", thread_ts=root, status="is working…", loading_messages=["Running shell…"])
    assert fake_slack.state.statuses[-1]["loading_messages"] == ["Running shell…"]


def test_a_stream_grows_by_appends_and_is_refused_once_stopped(fake_slack, client):
    root = thread(fake_slack)
    who = {"recipient_user_id": "U1", "recipient_team_id": "T111"}
    ts = client.chat_startStream(channel="C1", thread_ts=root, markdown_text="Hel", **who)["ts"]
    client.chat_appendStream(channel="C1", ts=ts, chunks=[{"type": "markdown_text", "text": "lo"}])
    task = {"type": "task_update", "id": "c1", "title": "shell", "status": "in_progress"}
    client.chat_appendStream(channel="C1", ts=ts, chunks=[task])
    client.chat_stopStream(channel="C1", ts=ts, chunks=[{**task, "status": "complete"}])
    [message] = [m for m in fake_slack.thread("C1", root) if m.get("bot_id")]
    assert message["text"] == "Hello" and not message["streaming"] and message["appends"] == 2
    assert message["tasks"] == [{"id": "c1", "title": "shell", "status": "complete"}]
    assert error_of(lambda: client.chat_appendStream(channel="C1", ts=ts, markdown_text="more")) == (
        "message_not_in_streaming_state"
    )
    assert error_of(lambda: client.chat_stopStream(channel="C1", ts=ts)) == "message_not_in_streaming_state"


def test_stream_calls_are_checked_as_slack_checks_them(fake_slack, client):
    root = thread(fake_slack)
    who = {"recipient_user_id": "U1", "recipient_team_id": "T111"}
    start = client.chat_startStream
    assert error_of(lambda: start(channel="C1", thread_ts=root, markdown_text="x")) == (
        "invalid_arguments:recipient_user_id"  # a channel stream names whom it answers
    )
    assert error_of(lambda: start(channel="C1", thread_ts="1.000009", markdown_text="x", **who)) == (
        "thread_not_found"
    )
    assert error_of(lambda: start(channel="C1", thread_ts=root, markdown_text="x" * 12_001, **who)) == (
        "msg_too_long"
    )
    assert error_of(lambda: start(channel="C1", thread_ts=root, chunks=[{"type": "task_update"}], **who)) == (
        "invalid_chunks"
    )
    ts = start(channel="C1", thread_ts=root, **who)["ts"]
    assert error_of(lambda: client.chat_appendStream(channel="C1", ts=ts)) == "no_text"
    fake_slack.refuse_streaming("C1")
    assert error_of(lambda: start(channel="C1", thread_ts=root, markdown_text="x", **who)) == (
        "method_not_supported_for_channel_type"
    )
