"""Correlated logs end to end: with LOG_FORMAT=json every line of web, the turn worker and the
delivery worker is one JSON object naming its thread (and turn), and no line holds what a person
wrote or a secret."""

from __future__ import annotations

import json
from typing import Any

from agent.testing import FakeLLM, Reply, calls, text
from gateway.sandbox.fake_slack import FakeSlack
from tests.conftest import StackFactory
from tests.polling import wait_for
from tests.slack_events import mention
from tests.unattended import UNATTENDED

PLANTED_TEXT = "the-quartermaster-sails-at-dawn"
PLANTED_TOKEN = "xoxp-918273645012-564738291034-a1b2c3d4e5f6a7b8c9d0e1f2"  # a user token a person pasted


def json_lines(log: str) -> list[dict[str, Any]]:
    lines = [line for line in log.splitlines() if line.strip()]
    parsed = [json.loads(line) for line in lines]  # a line that is not JSON fails the test here
    assert all({"ts", "level", "logger", "message"} <= line.keys() for line in parsed)
    return parsed


def test_every_line_of_a_turn_names_its_thread_and_turn_and_none_holds_text_or_secrets(
    make_stack: StackFactory, fake_slack: FakeSlack, fake_llm: FakeLLM, redis
):
    stack = make_stack(LOG_FORMAT="json", LOG_LEVEL="DEBUG", **UNATTENDED)
    said = f"please note {PLANTED_TEXT} and keep {PLANTED_TOKEN} safe"
    root = fake_slack.add_user_message("C111", f"<@UBOT0001> {said}", user="W222")
    fake_llm.script(
        Reply(status=429, error={"error": {"message": "slow down"}}, headers={"Retry-After": "0"}),
        calls(("call_1", "write_file", {"path": "notes.txt", "content": said})),
        text(f"Noted: {PLANTED_TEXT}"),
    )

    assert stack.send_event(mention(said, ts=root["ts"])).status_code == 200
    answered = lambda: any("Noted" in str(m) for m in fake_slack.thread("C111", root["ts"]))  # noqa: E731
    wait_for(answered, what="the answer in the thread")
    thread = f"T111:C111:{root['ts']}"
    meta = {k.decode(): v.decode() for k, v in redis.hgetall(f"tl:{{{thread}}}:meta").items()}

    def delivered() -> list[dict[str, Any]]:
        lines = json_lines(stack.log("worker0"))
        return [line for line in lines if line["logger"].startswith("gateway.delivery")]

    delivery = wait_for(delivered, what="a line of the delivery worker")
    web = json_lines(stack.log("web"))
    worker = json_lines(stack.log("worker0"))
    mentions = [line for line in web if line["logger"] == "gateway.listeners.mentions"]
    assert [(m["team"], m["channel"], m["thread"]) for m in mentions] == [("T111", "C111", thread)]
    retries = [line for line in worker if line["logger"] == "agent.model.retrying"]
    assert [(r["thread"], r["turn"], r["job"]) for r in retries] == [(thread, meta["turn_id"], meta["job"])]
    model_calls = [line for line in worker if line["logger"] == "httpx" and "/chat/" in line["message"]]
    assert len(model_calls) == 3 and all(line.get("turn") == meta["turn_id"] for line in model_calls)
    assert all(line["thread"] == thread and line["job"] != meta["job"] for line in delivery)
    everything = stack.log("web") + stack.log("worker0")
    assert PLANTED_TEXT not in everything
    assert PLANTED_TOKEN not in everything and "xoxb-sandbox-token" not in everything
