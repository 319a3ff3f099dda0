"""Two `web` replicas on one Redis, each with two gunicorn workers, as behind a load balancer:
whichever replica a delivery lands on, Slack's retries and the `message` twin of a mention make
one input and one turn."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agent.testing import text
from gateway.sandbox.fake_slack import BOT_USER_ID
from gateway.sandbox.stack import Stack
from jobs.keys import SessionKey
from tests.e2e.test_inbound import _barrier, answered, reply, start_session, user_texts
from tests.slack_events import mention, message

REPLICA = {"WEB_CONCURRENCY": "2"}


def retry(attempt: int) -> dict[str, str]:
    return {"X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": "http_timeout"}


def test_a_retry_storm_split_across_two_replicas_and_the_twin_make_one_input_and_one_turn(
    make_stack, fake_slack, fake_llm, redis
):
    one, two = make_stack(**REPLICA), make_stack(workers=0, **REPLICA)
    root = start_session(two, fake_slack, fake_llm)  # the session's first mention lands on the second
    again = reply(fake_slack, root, f"<@{BOT_USER_ID}> run the tests")
    fake_llm.script(text("tests pass"))
    delivery = mention("run the tests", ts=again["ts"], thread_ts=root["ts"], event_id="EvSplit1")
    twin = message(again["text"], ts=again["ts"], thread_ts=root["ts"], event_id="EvSplit2")
    sends: list[tuple[Stack, dict[str, Any], dict[str, str]]] = [
        (one, delivery, {}),
        (two, twin, {}),
        *((one if attempt % 2 else two, delivery, retry(attempt)) for attempt in (1, 2, 3)),
        (one, twin, retry(1)),
    ]

    with ThreadPoolExecutor(max_workers=len(sends)) as pool:  # at once, as a storm arrives
        responses = list(pool.map(lambda send: send[0].send_event(send[1], headers=send[2]), sends))
    assert [response.status_code for response in responses] == [200] * len(sends)

    assert answered(fake_slack, "C111", root["ts"], 2)[-1] == "tests pass"
    assert _barrier(one, fake_slack, fake_llm, root, 3) == ["first answer", "tests pass", "after the barrier"]
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    assert user_texts(redis, key) == ["<@W222>: hello", "<@W222>: run the tests", "<@W222>: barrier"]
    assert len(fake_llm.accepted()) == 3  # one turn per input, none for the duplicates
