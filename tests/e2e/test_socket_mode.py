"""Socket Mode: `threadline web --socket` dials the fake Slack's WebSocket, acknowledges every
envelope within 3 seconds, and does what the HTTP app does."""

from __future__ import annotations

import copy
import json

import pytest

from agent.testing import text
from gateway.sandbox.fake_slack import BOT_USER_ID
from tests.e2e.sessions import response_url
from tests.polling import wait_for
from tests.slack_events import block_action, command, mention, samples
from tests.thread_view import bot_messages, buttons, shown

ACK_DEADLINE_S = 3.0


@pytest.fixture
def socket_stack(make_stack, fake_slack):
    return make_stack(socket_mode=fake_slack.socket_mode)


def envelope(kind: str, payload: dict, envelope_id: str, **extra) -> dict:
    return {
        "envelope_id": envelope_id,
        "payload": payload,
        "type": kind,
        "accepts_response_payload": kind != "events_api",
        **extra,
    }


def send(fake_slack, message: dict):
    fake_slack.socket_mode.send(message)
    ack = fake_slack.socket_mode.ack_for(message["envelope_id"])
    assert fake_slack.socket_mode.ack_delay(message["envelope_id"]) < ACK_DEADLINE_S
    return ack


@pytest.mark.parametrize("index", [0, 1, 2])
def test_every_sample_envelope_is_acknowledged_within_3s(socket_stack, fake_slack, index):
    sample = copy.deepcopy(samples()["socket_mode_envelopes"]["envelopes"][index])
    ack = send(fake_slack, sample)
    assert ack.envelope_id == sample["envelope_id"]


def test_the_connection_was_opened_with_the_app_token(socket_stack, fake_slack):
    opened = fake_slack.calls("apps.connections.open")
    assert opened and opened[0].outcome == "ok"


def test_a_mention_over_the_socket_is_answered_in_its_thread(socket_stack, fake_slack, fake_llm):
    root = fake_slack.add_user_message("C111", f"<@{BOT_USER_ID}> over the socket", user="W222")
    fake_llm.script(text("heard you"))
    send(fake_slack, envelope("events_api", mention("over the socket", ts=root["ts"]), "env-mention"))
    replies = wait_for(lambda: bot_messages(fake_slack, "C111", root["ts"]), what="the answer")
    assert [m["text"] for m in replies] == ["heard you"]


def test_a_retried_envelope_makes_no_second_input(socket_stack, fake_slack, fake_llm, redis):
    root = fake_slack.add_user_message("C111", f"<@{BOT_USER_ID}> once", user="W222")
    fake_llm.script(text("once only"))
    body = mention("once", ts=root["ts"], event_id="EvSocketRetry")
    send(fake_slack, envelope("events_api", body, "env-a"))
    send(fake_slack, envelope("events_api", body, "env-b", retry_attempt=1, retry_reason="timeout"))
    wait_for(lambda: bot_messages(fake_slack, "C111", root["ts"]), what="the answer")
    assert len(fake_llm.requests) == 1


def test_the_command_answers_in_the_ack_payload(socket_stack, fake_slack):
    fields = command("help", response_url=response_url(fake_slack))
    ack = send(fake_slack, envelope("slash_commands", fields, "env-command"))
    assert ack.payload["response_type"] == "ephemeral" and "cancel [link]" in ack.payload["text"]


def test_a_stop_click_over_the_socket_stops_the_turn(socket_stack, fake_slack, busy_turns):
    turn = busy_turns.start()
    value = json.dumps({"s": str(turn.key)}, separators=(",", ":"))
    click = block_action("tl_stop", value, response_url=response_url(fake_slack))
    send(fake_slack, envelope("interactive", click, "env-click"))
    busy_turns.assert_stopped(turn)
    card = bot_messages(fake_slack, turn.key.channel, turn.key.thread_ts)[0]
    assert "Stopped" in shown(card) and buttons(card) == {}
