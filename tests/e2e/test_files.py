"""Files in and out of a thread, through web, real workers, the fake Slack and the fake model."""

from __future__ import annotations

from agent.testing import FakeLLM, calls, text
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from jobs.keys import SessionKey
from jobs.queues import schedule_delivery
from jobs.session.notices import InfoNotice
from jobs.session.store import SessionStore
from tests.e2e.sessions import post
from tests.polling import wait_for
from tests.slack_events import mention, message
from tests.thread_view import bot_messages

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 40


def _tool_results(request: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def _image_urls(request: dict) -> list[str]:
    parts = [p for m in request["messages"] if isinstance(m["content"], list) for p in m["content"]]
    return [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]


def _files_in_thread(fake_slack: FakeSlack, key: SessionKey) -> list[dict]:
    return [f for m in bot_messages(fake_slack, key.channel, key.thread_ts) for f in m.get("files") or []]


def test_shared_files_reach_the_agent_and_a_file_it_sends_appears_once(
    make_stack, fake_slack, fake_llm: FakeLLM, redis
):
    fake_llm.vision = True
    stack = make_stack(LLM_VISION="true")
    notes = fake_slack.share_file("notes.txt", b"the password is tangerine\n")
    shot = fake_slack.share_file("screen.png", PNG, "image/png")
    root = fake_slack.add_user_message("C111", f"<@{BOT_USER_ID}> read these", user="W222")
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    fake_llm.script(
        calls(
            ("c1", "read_file", {"path": ".threadline/uploads/notes.txt"}),
            ("c2", "write_file", {"path": "out/report.txt", "content": "tangerine, confirmed"}),
        ),
        calls(("c3", "send_file", {"path": "out/report.txt", "title": "The report"})),
        text("Sent you the report."),
    )
    assert stack.send_event(mention("read these", ts=root["ts"], files=[notes, shot])).status_code == 200

    wait_for(
        lambda: "Sent you the report." in str(bot_messages(fake_slack, "C111", root["ts"])), what="answer"
    )
    first, second = fake_llm.accepted()[:2]
    told = next(m["content"] for m in first["messages"] if isinstance(m["content"], list))
    assert "`.threadline/uploads/notes.txt`" in told[0]["text"] and "the image follows" in told[0]["text"]
    images = _image_urls(first)
    assert len(images) == 1 and images[0].startswith("data:image/png;base64,")
    assert fake_llm.rejected == [] and all(with_token for _, with_token in fake_slack.state.downloads)
    assert "tangerine" in _tool_results(second)["c1"]
    sent = wait_for(lambda: _files_in_thread(fake_slack, key), what="the file in the thread")
    assert [(f["name"], f["title"]) for f in sent] == [("report.txt", "The report")]
    assert fake_slack.state.uploaded[sent[0]["id"]] == b"tangerine, confirmed"

    # A redelivery from the start (a lost cursor, repeated jobs) uploads nothing again.
    SessionStore(redis, key).meta.set_delivered("0-0")
    for _ in range(3):
        schedule_delivery(redis, key)
    post(redis, key, InfoNotice(text="barrier"))
    wait_for(lambda: "barrier" in str(bot_messages(fake_slack, "C111", root["ts"])), what="the barrier")
    assert len(_files_in_thread(fake_slack, key)) == 1
    assert len(fake_slack.calls("files.completeUploadExternal")) == 1

    # A reply sharing what UPLOAD_TYPES refuses: the thread and the model are told, nothing is saved.
    program = fake_slack.share_file("setup.exe", b"MZ", "application/x-msdownload")
    fake_llm.script(text("Noted."))
    refused = message(
        "and this", ts=fake_slack.next_ts(), thread_ts=root["ts"], subtype="file_share", files=[program]
    )
    stack.send_event(refused)
    wait_for(
        lambda: "Not taken: `setup.exe`" in str(bot_messages(fake_slack, "C111", root["ts"])), what="refusal"
    )
    last = wait_for(lambda: len(fake_llm.accepted()) >= 4 and fake_llm.accepted()[3], what="the next request")
    assert (
        "setup.exe: not taken" in str(last["messages"])
        and [d for d, _ in fake_slack.state.downloads].count(program["id"]) == 0
    )
