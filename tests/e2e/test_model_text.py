"""What the model's words may do in the channel, end to end: real web and workers, the fake
model writing hostile text, and what the fake Slack received.

The model's text (an answer, a streamed step, a tool's name and arguments on the card and the
status line, a sent file's title) is a prompt injection's voice: its broadcast mentions reach
Slack broken (`<` U+200B `!channel>`, `@` U+200B `here`: a zero-width space after the first character), unless
SLACK_BROADCAST_CHANNELS lists the channel; a person's mention (`<@W…>`) and a date stay as
written. Posts ask Slack not to unfurl the links in them unless SLACK_UNFURL is on.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

from agent.testing import Reply, calls, text
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from jobs.keys import SessionKey
from tests.polling import wait_for
from tests.slack_events import mention
from tests.thread_view import bot_messages, shown

ZWSP = "\u200b"
DATE = "<!date^1700000000^{date_short}|Nov 14>"
HOSTILE = (
    "Done. <!channel> <!here|here> <!everyone> <!GROUP> <!subteam^S0123|@oncall> @channel @HERE "
    f"<@W222> {DATE} https://evil.example/?d=secret"
)
NEUTRALISED = (
    f"Done. <{ZWSP}!channel> <{ZWSP}!here|here> <{ZWSP}!everyone> <{ZWSP}!GROUP> "
    f"<{ZWSP}!subteam^S0123|@oncall> @{ZWSP}channel @{ZWSP}HERE <@W222> {DATE} https://evil.example/?d=secret"
)
# What Slack would take as a broadcast: the command syntax, or a bare word Slack may link itself.
BROADCAST = re.compile(
    r"<!(?:channel|here|everyone|group|subteam\^)|(?<![\w\u200b])@(?:channel|here|everyone)\b", re.I
)
OUTGOING = (
    "chat.postMessage",
    "chat.update",
    "chat.startStream",
    "chat.appendStream",
    "chat.stopStream",
    "files.getUploadURLExternal",
    "files.completeUploadExternal",
    "assistant.threads.setStatus",
)


def start(stack, fake_slack: FakeSlack, words: str, channel: str = "C111") -> SessionKey:
    root = fake_slack.add_user_message(channel, f"<@{BOT_USER_ID}> {words}", user="W222")
    assert stack.send_event(mention(words, ts=root["ts"], channel=channel)).status_code == 200
    return SessionKey(team="T111", channel=channel, thread_ts=root["ts"])


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def broadcasts(fake_slack: FakeSlack) -> list[str]:
    """Every string the fake Slack received that would ping a channel or a group."""
    sent = [s for c in fake_slack.calls() if c.method in OUTGOING for s in strings(c.args)]
    return [s for s in sent if BROADCAST.search(s)]


def answer_of(fake_slack: FakeSlack, key: SessionKey) -> dict:
    def found() -> dict | None:
        for message in bot_messages(fake_slack, key.channel, key.thread_ts):
            if message.get("text", "").startswith("Done.") and not message.get("streaming"):
                return message
        return None

    return wait_for(found, timeout=60, what="the answer in the thread")


def script_hostile_turn(fake_llm, answer: Reply) -> None:
    fake_llm.script(
        calls(
            ("c1", "read_file", {"path": "<!here> @everyone.txt"}),
            ("c2", "write_file", {"path": "out.txt", "content": "report"}),
        ),
        calls(("c3", "send_file", {"path": "out.txt", "title": "<!channel> report @here"})),
        answer,
    )


def test_posted_model_text_pings_nobody_and_unfurls_nothing(make_stack, fake_slack, fake_llm):
    stack = make_stack(SLACK_STREAMING="off")
    script_hostile_turn(fake_llm, text(HOSTILE))
    key = start(stack, fake_slack, "summarise the file")

    answer = answer_of(fake_slack, key)
    assert answer["text"] == NEUTRALISED  # the real shape: visible, with a break Slack does not parse
    files = wait_for(
        lambda: [f for m in bot_messages(fake_slack, "C111", key.thread_ts) for f in m.get("files") or []],
        what="the sent file",
    )
    assert [f["title"] for f in files] == [f"<{ZWSP}!channel> report @{ZWSP}here"]
    card = next(m for m in bot_messages(fake_slack, "C111", key.thread_ts) if m.get("blocks"))
    assert f"@{ZWSP}everyone.txt" in shown(card)  # the card's call line, escaped and broken
    assert broadcasts(fake_slack) == []
    posts = fake_slack.calls("chat.postMessage")
    assert posts and all(
        (c.args.get("unfurl_links"), c.args.get("unfurl_media")) == (False, False) for c in posts
    )
    assert not any(c.args.get("link_names") or c.args.get("parse") == "full" for c in posts)


def test_a_listed_channel_gets_the_mentions_and_unfurls_as_set(make_stack, fake_slack, fake_llm):
    stack = make_stack(SLACK_STREAMING="off", SLACK_BROADCAST_CHANNELS="C222,C111", SLACK_UNFURL="true")
    fake_llm.script(text(HOSTILE))
    key = start(stack, fake_slack, "tell everyone")

    assert answer_of(fake_slack, key)["text"] == HOSTILE
    [post] = [c for c in fake_slack.calls("chat.postMessage") if c.args.get("markdown_text") == HOSTILE]
    assert (post.args["unfurl_links"], post.args["unfurl_media"]) == (True, True)


def test_a_streamed_answer_never_forms_a_mention_across_its_appends(make_stack, fake_slack, fake_llm):
    stack = make_stack(SLACK_STREAMING="on")
    # Written 16 characters at a time, slowly: appends cut the text wherever the model had got to.
    # The rest waits until the stream has started with the first piece, however slow delivery is.
    padded = "Done. " + " ".join(f"{'x' * (i % 13)}{HOSTILE}" for i in range(6))
    rest = threading.Event()
    fake_llm.script(
        Reply(tool_calls=[("c1", "<!here>", '{"note": "@channel"}')]),
        Reply(text=padded, text_every_s=0.05, rest_gate=rest),
    )
    key = start(stack, fake_slack, "stream it")
    wait_for(
        lambda: any(
            m.get("streaming") and shown(m).startswith("Done.")
            for m in bot_messages(fake_slack, "C111", key.thread_ts)
        ),
        timeout=30,
        what="the answer's stream, started with its first piece",
    )
    rest.set()

    answer = answer_of(fake_slack, key)
    assert answer["text"] == "Done. " + " ".join(f"{'x' * (i % 13)}{NEUTRALISED}" for i in range(6))
    later = [
        chunk
        for c in fake_slack.calls()
        if c.method in ("chat.appendStream", "chat.stopStream") and c.args["ts"] == answer["ts"]
        for chunk in c.args.get("chunks") or []
    ]
    assert [chunk for chunk in later if chunk["type"] == "markdown_text"]  # the rest arrived in pieces
    tasks = [t for m in bot_messages(fake_slack, "C111", key.thread_ts) for t in m.get("tasks") or []]
    assert tasks and all(BROADCAST.search(t["title"] + t.get("details", "")) is None for t in tasks)
    assert broadcasts(fake_slack) == []
