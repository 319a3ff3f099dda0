"""What the benchmarks count as an answer reaching its thread, read back from the fake Slack."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slack_sdk import WebClient

from bench.threads import answer_times
from gateway.sandbox.fake_slack import FakeSlack

ANSWER = "done with this one"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack(bot_token="xoxb-test").start()
    yield fake
    fake.stop()


def test_a_streamed_answer_counts_once_its_pieces_hold_it_whole(slack: FakeSlack) -> None:
    client = WebClient(token="xoxb-test", base_url=slack.api_url)
    root = slack.add_user_message("C1", "<@UBOT0001> go", user="W1")
    where = {"channel": "C1", "recipient_team_id": "T111", "recipient_user_id": "W1"}
    tools = client.chat_startStream(
        thread_ts=root["ts"],
        chunks=[{"type": "task_update", "id": "c1", "title": "ls", "status": "complete"}],
        **where,
    )
    client.chat_stopStream(channel="C1", ts=tools["ts"])
    answer = client.chat_startStream(
        thread_ts=root["ts"], chunks=[{"type": "markdown_text", "text": ANSWER[:16]}], **where
    )
    assert answer_times(slack, ANSWER) == {}  # a piece of it is not the answer
    client.chat_stopStream(
        channel="C1", ts=answer["ts"], chunks=[{"type": "markdown_text", "text": ANSWER[16:]}]
    )

    [stop] = [c for c in slack.calls("chat.stopStream") if c.args["ts"] == answer["ts"]]
    assert answer_times(slack, ANSWER) == {root["ts"]: stop.at}
