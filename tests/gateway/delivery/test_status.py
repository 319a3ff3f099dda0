"""The delivery job's status work against the fake Slack over HTTP and a real Redis: the agent
session's lifecycle (`processing`, then `active` or `suspended`), its title, the status line's
loading messages, and the quiet fallback when the app has no agent sessions."""

from __future__ import annotations

from redis import Redis
from slack_sdk import WebClient

from gateway.delivery.agent_session import (
    MAX_RETRIES,
    OFF_FOR_S,
    STATUS_AT_NOTE,
    TITLE_MAX_CHARS,
    session_title,
)
from gateway.delivery.job import Delivery
from gateway.delivery.ledger import Ledger
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack, Fault
from gateway.sandbox.stack import BOT_TOKEN
from jobs.control import submit_input
from jobs.keys import SessionKey, agent_sessions_off_key, timer_key
from jobs.session.notices import (
    AnswerNotice,
    ApprovalRequestNotice,
    CancelledNotice,
    Notice,
    ProgressNotice,
    ToolLine,
    TurnCard,
)
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput

T0 = 1_800_000_000.0


def session(redis: Redis, fake_slack: FakeSlack, words: str, owner: str = "W222") -> SessionStore:
    root = fake_slack.add_user_message("C111", f"<@{BOT_USER_ID}> {words}", user=owner)
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    submit_input(redis, key, UserInput(text=words, user=owner, ts=root["ts"]), turn_timeout_s=60)
    return SessionStore(redis, key)


def card(state: str, *running: str, turn: str = "t1") -> ProgressNotice:
    tools = [
        ToolLine(tool_call_id=f"c{i}", name=name, summary="", state="running")
        for i, name in enumerate(running)
    ]
    return ProgressNotice(card=TurnCard(turn_id=turn, state=state, started_at=T0, updated_at=T0, tools=tools))


def deliver(store: SessionStore, fake_slack: FakeSlack, *notices: Notice) -> None:
    for notice in notices:
        store.post_notice(notice)
    Delivery(store, WebClient(token=BOT_TOKEN, base_url=fake_slack.api_url)).run()


def approval() -> ApprovalRequestNotice:
    return ApprovalRequestNotice(
        turn_id="t1", approval_id="a1", tool_call_id="c1", tool_name="shell", summary="command: make deploy"
    )


def test_a_turn_makes_the_session_work_titled_with_the_request_and_leaves_it_at_the_end(redis, fake_slack):
    store = session(redis, fake_slack, "fix the flaky test in <#C222|ci> tests/test_io.py")
    key = store.key
    deliver(store, fake_slack, card("running", "shell"))
    assert fake_slack.session_statuses(key.channel, key.thread_ts) == ["processing"]
    created = fake_slack.state.agent_sessions[f"{key.channel}:{key.thread_ts}"]
    assert created["title"] == "fix the flaky test in #ci tests/test_io.py"
    assert created["initiator_user_id"] == "W222"
    assert len(fake_slack.calls("agents.sessions.rename")) == 1
    line = fake_slack.state.statuses[-1]
    assert (line["status"], line["loading_messages"]) == ("is working…", ["Running shell…"])

    deliver(store, fake_slack, AnswerNotice(turn_id="t1", text="fixed"), card("done"))
    assert fake_slack.session_statuses(key.channel, key.thread_ts) == ["processing", "active"]
    assert fake_slack.state.statuses[-1]["status"] == ""
    deliver(store, fake_slack, card("running", turn="t2"))
    assert len(fake_slack.calls("agents.sessions.rename")) == 1  # titled once: a person may rename it


def test_a_parked_approval_suspends_the_session_and_a_stop_settles_it(redis, fake_slack):
    store = session(redis, fake_slack, "deploy")
    key = store.key
    deliver(store, fake_slack, card("running", "shell"))
    deliver(store, fake_slack, approval(), card("awaiting_approval"))
    assert fake_slack.session_statuses(key.channel, key.thread_ts) == ["processing", "suspended"]
    assert fake_slack.state.statuses[-1]["status"] == ""  # no "working" line while a person decides
    deliver(store, fake_slack, card("running", "shell", turn="t2"))  # approved: the work goes on
    assert fake_slack.session_statuses(key.channel, key.thread_ts)[-1] == "processing"
    deliver(store, fake_slack, approval(), card("awaiting_approval", turn="t2"))
    deliver(store, fake_slack, CancelledNotice(turn_id="t2", by="W222", text="Stopped by <@W222>."))
    expected = ["processing", "suspended", "processing", "suspended", "active"]
    assert fake_slack.session_statuses(key.channel, key.thread_ts) == expected


def test_a_handed_back_turn_keeps_the_session_working(redis, fake_slack):
    store = session(redis, fake_slack, "long build")
    deliver(store, fake_slack, card("running", "shell"))
    deliver(store, fake_slack, card("handed_back"))
    assert fake_slack.session_statuses(store.key.channel, store.key.thread_ts) == ["processing"]
    assert fake_slack.state.statuses[-1]["status"] == ""


def test_without_agent_sessions_the_status_line_alone_is_kept_and_slack_is_not_asked_again(redis, fake_slack):
    fake_slack.state.agent_view = False
    first = session(redis, fake_slack, "first")
    deliver(first, fake_slack, card("running", "shell"))
    refused = fake_slack.calls("agents.sessions.setStatus")
    assert [call.outcome for call in refused] == ["not_agent_app"]
    assert fake_slack.state.statuses[-1]["loading_messages"] == ["Running shell…"]
    assert 0 < redis.ttl(agent_sessions_off_key("T111")) <= OFF_FOR_S

    second = session(redis, fake_slack, "second")
    deliver(second, fake_slack, card("running", "grep"))
    deliver(second, fake_slack, AnswerNotice(turn_id="t1", text="done"), card("done"))
    deliver(first, fake_slack, AnswerNotice(turn_id="t1", text="done"), card("done"))
    assert len(fake_slack.calls("agents.sessions.setStatus")) == 1
    assert not fake_slack.calls("agents.sessions.rename")
    assert [s["status"] for s in fake_slack.state.statuses].count("") == 2  # both lines cleared


def test_a_status_slack_failed_to_take_is_said_again_a_few_times_then_left(redis, fake_slack):
    store = session(redis, fake_slack, "build")
    key = store.key
    deliver(store, fake_slack, card("running", "shell"))
    fake_slack.inject(Fault(method="agents.sessions.setStatus", status=500, count=1))
    deliver(store, fake_slack, AnswerNotice(turn_id="t1", text="built"), card("done"))
    assert fake_slack.session_statuses(key.channel, key.thread_ts) == ["processing"]
    assert redis.exists(timer_key(key, "status"))  # a delivery comes back to it later

    Ledger(store).set_note(STATUS_AT_NOTE, "0")  # that time has come
    deliver(store, fake_slack)
    assert fake_slack.session_statuses(key.channel, key.thread_ts) == ["processing", "active"]

    stuck = session(redis, fake_slack, "stuck")
    deliver(stuck, fake_slack, card("running", "shell"))
    fake_slack.inject(Fault(method="agents.sessions.setStatus", status=500, count=100))
    deliver(stuck, fake_slack, AnswerNotice(turn_id="t1", text="done"), card("done"))
    for _ in range(MAX_RETRIES + 3):
        Ledger(stuck).set_note(STATUS_AT_NOTE, "0")
        deliver(stuck, fake_slack)
    calls = fake_slack.calls("agents.sessions.setStatus")
    failed = [c for c in calls if c.args["thread_ts"] == stuck.key.thread_ts and c.outcome != "ok"]
    assert len(failed) == 1 + MAX_RETRIES  # the first, then MAX_RETRIES more: never forever


def test_a_session_title_is_one_plain_line_of_the_request():
    said = (
        "<@U123> please\n\n  fix `make lint` <https://ci.example.com/run/7|run 7> <!here>\u202e\x07 "
        + "word " * 40
    )
    title = session_title(said)
    assert title.startswith("please fix make lint run 7 word word")
    assert len(title) <= TITLE_MAX_CHARS and title.endswith("…") and "\n" not in title and "<" not in title
    assert session_title("") == ""


def test_a_request_of_unclosed_markup_is_titled_in_one_pass():
    # A person's message is anyone's text: each "<@" once started a scan to the end for its ">"
    # (quadratic: 2 MB took hours in the delivery worker).
    title = session_title("<@" * 1_000_000 + " fix it")
    assert title.startswith("<@<@") and len(title) <= TITLE_MAX_CHARS
    assert session_title("<@U1 <@U2> fix <https://ci.example.com/run/7|run 7>") == "<@U1 fix run 7"
    assert session_title("<@U1|ann> fix <https://ci.example.com/run/7|run 7>") == "fix run 7"
