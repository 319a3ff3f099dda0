"""How the Bolt app answers a listener's failure: a bad request is 400, our own bug is 500.

A listener's bug must not look like the sender's mistake: it is logged as an error with its
traceback and answered 500, so Slack retries (and someone notices); only what the payload
boundary refuses (`InvalidPayload`) is a 400 with a warning. Redis failing is a 503, even after
the mention's input is recorded: its retry is then a duplicate, and the janitor queues the turn.
"""

from __future__ import annotations

import json
import logging

import pytest
from rq.job import Job
from slack_bolt import BoltRequest

from gateway.app import build_app
from gateway.render.buttons import INSPECT, ButtonValue
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.signing import event_request, interaction_request
from jobs import log_context, runtime
from jobs.janitor import JANITOR_LOCK, sweep
from jobs.keys import SessionKey, turn_queued_key
from jobs.log_context import RECORD_ATTRIBUTE, ContextFilter
from jobs.queues import SERIALIZER, TURN_JOB, TURNS_QUEUE, queue
from jobs.session.store import SessionStore
from jobs.settings import Settings
from tests.slack_events import block_action, mention

SECRET = "test-signing-secret"
KEY = SessionKey(team="T111", channel="C111", thread_ts="1700000000.000001")

# A wire log our own code cannot read: the listener that reads it fails on its own data.
BROKEN_WIRE = {
    "KeyError": {"x": "entry without its record field"},
    "TypeError": {"r": "[1, 2]"},
}


@pytest.fixture
def app(redis, redis_url: str, fake_slack: FakeSlack):
    settings = Settings(
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_BOT_TOKEN=fake_slack.state.bot_token,
        SLACK_API_URL=fake_slack.api_url,
        REDIS_URL=redis_url,
    )
    return build_app(settings, redis)


def click(app, fake_slack: FakeSlack, action_id: str, value: str):
    payload = block_action(action_id, value, response_url=f"{fake_slack.url}/response/1")
    body, headers = interaction_request(SECRET, payload)
    return app.dispatch(BoltRequest(body=body.decode(), headers=headers))


@pytest.mark.parametrize("error", list(BROKEN_WIRE))
def test_a_listeners_own_bug_is_a_logged_error_answered_500(app, redis, fake_slack, caplog, error):
    redis.xadd(SessionStore(redis, KEY).wire_key, BROKEN_WIRE[error])
    value = ButtonValue(KEY, tool_call_id="call-1").encode()

    with caplog.at_level(logging.INFO, logger="gateway"):
        response = click(app, fake_slack, INSPECT, value)

    assert response.status == 500
    assert "invalid payload" not in str(response.body)
    failures = [r for r in caplog.records if r.name == "gateway.app" and r.levelno >= logging.ERROR]
    assert failures and failures[0].exc_info and failures[0].exc_info[0].__name__ == error
    assert not [r for r in caplog.records if "invalid payload" in r.getMessage()]


def test_a_payload_the_boundary_refuses_is_a_400_with_a_warning(app, fake_slack, caplog):
    value = ButtonValue(KEY, tool_call_id="call-1").encode()
    payload = block_action(INSPECT, value, response_url=f"{fake_slack.url}/response/1")
    payload["user"] = "W222"  # Slack sends an object
    body, headers = interaction_request(SECRET, payload)

    with caplog.at_level(logging.INFO, logger="gateway"):
        response = app.dispatch(BoltRequest(body=body.decode(), headers=headers))

    assert response.status == 400
    assert "user" in json.loads(response.body)["error"]
    assert [r for r in caplog.records if r.levelno == logging.WARNING and "invalid payload" in r.getMessage()]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_requests_lines_name_its_team_channel_and_thread_and_none_outlives_it(app, redis, fake_slack):
    redis.xadd(SessionStore(redis, KEY).wire_key, BROKEN_WIRE["KeyError"])
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.addFilter(ContextFilter())
    handler.emit = records.append  # type: ignore[method-assign]  # keep the records as they are
    logging.getLogger("gateway").addHandler(handler)
    try:
        click(app, fake_slack, INSPECT, ButtonValue(KEY, tool_call_id="call-1").encode())
    finally:
        logging.getLogger("gateway").removeHandler(handler)

    [failed] = [record for record in records if record.levelno == logging.ERROR]
    assert getattr(failed, RECORD_ATTRIBUTE) == {"team": "T111", "channel": "C111", "thread": str(KEY)}
    assert dict(log_context.current()) == {}  # this thread's next request starts with no fields


def test_a_mention_whose_enqueue_fails_is_a_503_its_retry_a_duplicate_and_its_turn_the_janitors(app, redis):
    ts = "1700000000.000200"
    body, headers = event_request(SECRET, mention("hello", ts=ts, event_id="EvEnqueueFails"))
    store = SessionStore(redis, SessionKey(team="T111", channel="C111", thread_ts=ts))
    turns = queue(redis, TURNS_QUEUE)
    redis.set(turns.key, "not a list")  # RQ's push fails with WRONGTYPE, after jobs/input.lua's claim

    assert app.dispatch(BoltRequest(body=body.decode(), headers=headers)).status == 503

    def inputs() -> list[str]:
        return [
            r["message"]["origin"]["ts"] for r in store.read_wire() if r["type"] == "context.append_message"
        ]

    assert inputs() == [ts]  # recorded before the enqueue failed
    meta = store.meta.read()
    assert meta.state == "queued" and not redis.exists(turn_queued_key(store.key))
    redis.delete(turns.key)  # Redis is well again by Slack's retry
    retry = {**headers, "X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_error"}
    assert app.dispatch(BoltRequest(body=body.decode(), headers=retry)).status == 200
    assert inputs() == [ts] and turns.count == 0  # a duplicate: recorded once, and nothing enqueued

    redis.delete(JANITOR_LOCK)
    assert meta.updated is not None
    sweep(redis, at_ms=meta.updated + int(runtime.settings().LEASE_TTL_SECONDS * 1000))
    [job_id] = turns.job_ids
    job = Job.fetch(job_id, connection=redis, serializer=SERIALIZER)
    assert (job.func_name, list(job.args)) == (TURN_JOB, [str(store.key)])
