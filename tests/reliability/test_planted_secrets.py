"""No secret reaches Slack, the model or a log (issue 16, part 4), tried through the real product.

Known values are planted in the worker's environment and settings: the Slack bot token and
signing secret, the model's API key, a password in REDIS_URL, a token (userinfo and query) in a
CHANNEL_REPOS URL that fails to clone, a ~/.netrc, another team's workspace, an internal service
and the cloud metadata endpoint (played by a local proxy: nothing leaves the machine). Then one
session per route, each started by a signed mention to the real `web` and run by real workers:
the failing clone, a provider error whose body quotes the key, a Slack error whose body quotes
the token, `shell` reading /proc/*/environ, `env`, `ls ../../..` and ~/.netrc, and `http_get` on
169.254.169.254 and 127.0.0.1. `threadline doctor` runs with the same environment.

Each route is then checked in each place a secret could surface: everything the fake Slack
received for the route's channel, every request body the fake model received for it, and the
session's wire log and outbox in Redis; the web and worker logs and doctor's output are checked
once for all. The shell and http_get routes are closed by the OS sandbox and the address checks
of `http_get` (other parts of issue 16); until those are in, their rows here fail.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from redis import Redis

from agent.testing import FakeLLM
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack, Fault
from gateway.sandbox.signing import event_request, interaction_request
from gateway.sandbox.stack import THREADLINE, Stack
from jobs.keys import SessionKey
from jobs.session.store import SessionStore
from tests.conftest import TEST_REDIS_URL
from tests.polling import wait_for
from tests.reliability.planted import (
    ROUTE_NAMES,
    SLACK_ERROR_CHANNEL,
    Listener,
    Planted,
    Route,
    model_for,
    plant_home_and_workspaces,
    repository_url,
    routes,
    with_password,
)
from tests.slack_events import block_action, mention
from tests.thread_view import bot_messages, buttons, shown

pytestmark = pytest.mark.e2e

TEAM, USER = "T111", "W222"
SINKS = ("slack", "model", "wire")
TURN_TIMEOUT_S = 90


@dataclass
class Run:
    planted: Planted
    stack: Stack
    redis: Redis
    fake_slack: FakeSlack
    fake_llm: FakeLLM
    listener: Listener
    routes: list[Route]
    sessions: dict[str, SessionKey]
    doctor_output: str


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    planted = Planted.new()
    root = tmp_path_factory.mktemp("planted")
    redis = Redis.from_url(TEST_REDIS_URL)
    redis.flushdb()
    listener = Listener(planted).start()
    redis_url = with_password(TEST_REDIS_URL, planted.redis_password)
    all_routes = routes(planted, listener, redis_url)
    assert [route.name for route in all_routes] == list(ROUTE_NAMES)
    fake_slack = FakeSlack(bot_token=planted.bot_token).start()
    fake_llm = FakeLLM(default=model_for(all_routes)).start()
    env = planted_env(planted, listener, root)
    stack = Stack(root, redis_url, fake_slack.api_url, fake_llm.base_url, **env)
    try:
        stack.start()
        sessions = {route.name: drive(stack, fake_slack, planted, route) for route in all_routes}
        doctor = subprocess.run(
            [THREADLINE, "doctor"], env=stack.env, capture_output=True, text=True, timeout=60
        )
        doctor_output = doctor.stdout + doctor.stderr
        yield Run(planted, stack, redis, fake_slack, fake_llm, listener, all_routes, sessions, doctor_output)
    finally:
        stack.stop()
        for part in (fake_llm, fake_slack, listener):
            part.stop()
        redis.flushdb()
        redis.close()


def planted_env(planted: Planted, listener: Listener, root: Path) -> dict[str, str]:
    return {
        "SLACK_BOT_TOKEN": planted.bot_token,
        "SLACK_SIGNING_SECRET": planted.signing_secret,
        "LLM_API_KEY": planted.llm_api_key,
        "CHANNEL_REPOS": json.dumps({"CCLONE": repository_url(planted, listener)}),
        "APPROVAL_TOOLS": "",
        "SLACK_APPROVERS": USER,  # the person who approves each call the routes make
        # httpx (the model client, http_get) sends what is not local through this "proxy":
        # 169.254.169.254 is answered by the listener, never contacted.
        "ALL_PROXY": f"http://{listener.address}",
        "NO_PROXY": "127.0.0.1,localhost",
        **plant_home_and_workspaces(root, planted),
    }


def drive(stack: Stack, fake_slack: FakeSlack, planted: Planted, route: Route) -> SessionKey:
    """One session through web: a signed mention, approvals clicked if asked, until delivered."""
    if route.channel == SLACK_ERROR_CHANNEL:
        quoted = {"response_metadata": {"messages": [f"[ERROR] token {planted.bot_token} was rejected"]}}
        fake_slack.inject(Fault("chat.postMessage", status=500, error="fatal_error", extra=quoted))
    root = fake_slack.add_user_message(route.channel, f"<@{BOT_USER_ID}> {route.words}", user=USER)
    event = mention(route.words, ts=root["ts"], channel=route.channel)
    body, headers = event_request(planted.signing_secret, event)
    assert stack.client.post("/slack/events", content=body, headers=headers).status_code == 200
    key = SessionKey(team=TEAM, channel=route.channel, thread_ts=root["ts"])
    store = SessionStore(Redis.from_url(stack.env["REDIS_URL"]), key)
    settled = lambda: _settled(stack, fake_slack, planted, store)  # noqa: E731
    wait_for(settled, timeout=TURN_TIMEOUT_S, what=f"{route.name} to end")
    wait_for(lambda: _delivered(store), timeout=TURN_TIMEOUT_S, what=f"{route.name}'s notices in the thread")
    return key


def _settled(stack: Stack, fake_slack: FakeSlack, planted: Planted, store: SessionStore) -> bool:
    state = store.meta.read().state
    if state == "awaiting_approval":  # where shell asks whatever APPROVAL_TOOLS says: approve it
        _approve_all(stack, fake_slack, planted, store.key)
    return state in ("idle", "failed")


def _approve_all(stack: Stack, fake_slack: FakeSlack, planted: Planted, key: SessionKey) -> None:
    for card in bot_messages(fake_slack, key.channel, key.thread_ts):
        if "Approve" in buttons(card):
            answer_to = f"{fake_slack.url}/response/planted"
            payload = block_action("tl_approve", buttons(card)["Approve"], user=USER, channel=key.channel,
                                   message_ts=card["ts"], response_url=answer_to)  # fmt: skip
            body, headers = interaction_request(planted.signing_secret, payload)
            stack.client.post("/slack/events", content=body, headers=headers)


def _delivered(store: SessionStore) -> bool:
    """Every notice of the session is in the thread (the delivery cursor is at the newest)."""
    newest = store.redis.xrevrange(store.outbox_key, count=1)
    return bool(newest) and store.meta.read().delivered == newest[0][0].decode()


# -- evidence -------------------------------------------------------------------------------


def slack_evidence(run: Run, route: Route) -> str:
    """Every Web API call the fake Slack received that names the route's channel, and its
    messages as they stand (edits included)."""
    state = run.fake_slack.state
    with state.lock:
        calls = [json.dumps(vars(call), default=str) for call in state.calls]
        messages = json.dumps(run.fake_slack.channel_messages(route.channel), default=str)
    return "\n".join(call for call in calls if route.channel in call) + messages


def model_evidence(run: Run, route: Route) -> str:
    bodies = [json.dumps(body) for body in list(run.fake_llm.requests)]
    return "\n".join(body for body in bodies if route.words in body)


def wire_evidence(run: Run, route: Route) -> str:
    store = SessionStore(run.redis, run.sessions[route.name])
    outbox = run.redis.xrange(store.outbox_key)
    return json.dumps(store.read_wire(), default=str) + repr(outbox)


EVIDENCE = {"slack": slack_evidence, "model": model_evidence, "wire": wire_evidence}


@pytest.mark.parametrize("sink", SINKS)
@pytest.mark.parametrize("route_name", ROUTE_NAMES)
def test_no_planted_secret_reaches(run: Run, route_name: str, sink: str):
    route = next(route for route in run.routes if route.name == route_name)
    evidence = EVIDENCE[sink](run, route)
    assert run.planted.found_in(evidence) == [], f"{route_name} leaked into {sink}"


def test_no_planted_secret_reaches_the_logs_or_doctor(run: Run):
    logs = {path.name: path.read_text(errors="replace") for path in sorted(run.stack.logs.glob("*.log"))}
    logs["threadline doctor"] = run.doctor_output
    leaks = {name: run.planted.found_in(text) for name, text in logs.items() if run.planted.found_in(text)}
    assert leaks == {}


def test_every_route_was_really_tried(run: Run):
    """The checks above mean something only if each route did what it says."""
    texts = {route.name: "\n".join(shown(m) for m in bot_messages(run.fake_slack, route.channel,
                                                                  run.sessions[route.name].thread_ts))
             for route in run.routes}  # fmt: skip
    assert f"could not clone http://x-access-token:***@{run.listener.address}/org/repo.git" in texts["clone"]
    assert "private_token=***" in texts["clone"]
    assert "HTTP 401 (invalid_api_key, invalid_request_error)" in texts["provider-error"]
    assert "slack-error done" in texts["slack-error"]
    assert any(call.outcome == "fault:500:fatal_error" for call in run.fake_slack.calls("chat.postMessage"))
    assert "Slack chat.postMessage failed: HTTP 500 (fatal_error)" in run.stack.log("worker0")
    for route in run.routes:
        if route.tool is not None:  # the call was made and its result went back to the model
            assert f"{route.name} done" in texts[route.name]
            sent = [json.dumps(body) for body in run.fake_llm.requests if route.words in json.dumps(body)]
            assert any(f'"tool_call_id": "call-{route.name}"' in body for body in sent), route.name
    assert "redis://default:***@" in run.doctor_output
