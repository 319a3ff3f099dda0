"""Outbound: progress cards, status, answers within Slack's limits, notices, and delivery that
posts every notice exactly once (retries, crashes, 429 storms) at about one post a second."""

from __future__ import annotations

import itertools
import os
import re
import time

from gateway.sandbox.fake_slack import FakeSlack, Fault
from gateway.sandbox.stack import THREADLINE
from jobs.keys import SessionKey
from jobs.queues import schedule_delivery
from jobs.session.notices import (
    AnswerNotice,
    ErrorNotice,
    InfoNotice,
    ProgressNotice,
    ToolLine,
    TurnCard,
    UnknownResultNotice,
)
from jobs.session.store import SessionStore
from tests.e2e.sessions import open_session, post
from tests.polling import wait_for
from tests.thread_view import bot_messages, buttons, shown

T0 = 1_800_000_000.0


def snapshot(state: str, tools: list[tuple[str, str, str]], *, at: float, turn: str = "t1") -> ProgressNotice:
    lines = [
        ToolLine(tool_call_id=f"c{i}", name=n, summary=s, state=st, started_at=T0)
        for i, (n, s, st) in enumerate(tools)
    ]
    return ProgressNotice(
        card=TurnCard(
            turn_id=turn, state=state, started_at=T0, updated_at=T0 + at, steps=len(tools), tools=lines
        )
    )


def posts(fake_slack: FakeSlack, outcome: str = "ok") -> list:
    return [c for c in fake_slack.calls("chat.postMessage") if c.outcome == outcome]


def texts_after_first(fake_slack: FakeSlack, key: SessionKey) -> list[str]:
    return [shown(m) for m in bot_messages(fake_slack, key.channel, key.thread_ts)[1:]]


def wait_texts(fake_slack: FakeSlack, key: SessionKey, count: int, timeout: float = 20) -> list[str]:
    return wait_for(
        lambda: (found := texts_after_first(fake_slack, key)) and len(found) >= count and found,
        timeout=timeout,
        what=f"{count} delivered message(s)",
    )


def test_one_card_per_turn_edited_at_most_every_3s_with_the_final_state_always_shown(
    stack, fake_slack, fake_llm, redis
):
    key = open_session(stack, fake_slack, fake_llm)
    post(redis, key, snapshot("running", [("shell", "pytest -x", "running")], at=1))
    card = wait_for(lambda: bot_messages(fake_slack, key.channel, key.thread_ts)[1:], what="the card")[0]
    assert "Stop" in buttons(card) and "`shell`" in shown(card) and "pytest -x" in shown(card)
    for index in range(8):  # snapshots arrive every 0.4 s (this pacing is the input under test)
        tools = [("shell", "pytest -x", "done"), ("read_file", f"src/file{index}.py", "running")]
        post(redis, key, snapshot("running", tools, at=2 + index))
        time.sleep(0.4)
    final = [("shell", "pytest -x", "done"), ("read_file", "src/file7.py", "done")]
    post(redis, key, snapshot("done", final, at=20))

    done = wait_for(
        lambda: (m := bot_messages(fake_slack, key.channel, key.thread_ts)[1]) and "Done" in shown(m) and m,
        what="the final card",
    )
    assert done["ts"] == card["ts"] and buttons(done) == {}
    assert "src/file7.py" in shown(done) and "0:20" in shown(done)
    assert len(bot_messages(fake_slack, key.channel, key.thread_ts)) == 2  # one card, edited in place
    edits = [c.at for c in fake_slack.calls("chat.update") if c.args.get("ts") == card["ts"]]
    running_edits = edits[:-1]
    assert all(b - a >= 2.9 for a, b in itertools.pairwise(running_edits))
    assert len(edits) <= 4  # 3.6 s of snapshots: at most two throttled edits, and the final one


def test_the_working_status_is_set_while_running_and_cleared_at_the_end(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    earlier = len(fake_slack.state.statuses)  # the opening turn may have set and cleared its own
    post(redis, key, snapshot("running", [("shell", "make", "running")], at=1))
    wait_for(lambda: len(fake_slack.state.statuses) > earlier, what="a status")
    assert fake_slack.state.statuses[earlier] == {
        "channel_id": key.channel,
        "thread_ts": key.thread_ts,
        "status": "is working…",
        "loading_messages": ["Running shell…"],
    }
    post(redis, key, AnswerNotice(turn_id="t1", text="built"))
    post(redis, key, snapshot("done", [("shell", "make", "done")], at=3))
    wait_for(lambda: fake_slack.state.statuses[-1]["status"] == "", what="the status cleared")
    assert [s["status"] for s in fake_slack.state.statuses[earlier:]].count("") == 1


def test_a_failed_turn_clears_the_status_and_says_why(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    post(redis, key, snapshot("running", [("shell", "make", "running")], at=1))
    wait_for(lambda: fake_slack.state.statuses, what="the working status")
    post(redis, key, ErrorNotice(turn_id="t1", text="Sorry, I could not finish this turn: the model failed."))
    post(redis, key, snapshot("failed", [("shell", "make", "failed")], at=2))
    texts = wait_texts(fake_slack, key, 2)
    assert texts[1] == "Sorry, I could not finish this turn: the model failed."
    wait_for(lambda: "Failed" in texts_after_first(fake_slack, key)[0], what="the failed card")
    assert fake_slack.state.statuses[-1]["status"] == ""


def test_answers_are_posted_as_markdown(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    answer = "## Fixed\n\nThe flaky test now waits for the **socket**:\n\n```python\nwait_for(ready)\n```"
    post(redis, key, AnswerNotice(turn_id="t1", text=answer))
    wait_texts(fake_slack, key, 1)
    message = bot_messages(fake_slack, key.channel, key.thread_ts)[1]
    assert message["markdown_text"] == answer


def fences_balanced(chunk: str) -> bool:
    return len(re.findall(r"^```", chunk, flags=re.M)) % 2 == 0


def long_answer(paragraphs: int) -> str:
    code = "```python\n" + "\n".join(f"line_{i} = compute({i})  # step {i}" for i in range(90)) + "\n```"
    prose = [f"Paragraph {i}: " + " ".join(f"word{i}_{j}" for j in range(60)) for i in range(paragraphs)]
    return "\n\n".join([*prose[: paragraphs // 2], code, *prose[paragraphs // 2 :]])


def test_a_long_answer_is_split_on_paragraph_and_fence_boundaries(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    answer = long_answer(14)
    assert 8_000 < len(answer) < 15_000
    post(redis, key, AnswerNotice(turn_id="t1", text=answer))
    chunks = wait_for(
        lambda: (
            (m := bot_messages(fake_slack, key.channel, key.thread_ts)[1:])
            and sum(len(x["markdown_text"]) for x in m) >= len(answer) - 20 * len(m)
            and [x["markdown_text"] for x in m]
        ),
        what="the whole answer",
    )
    assert len(chunks) >= 3 and all(len(c) <= 3_900 for c in chunks)
    assert all(fences_balanced(c) for c in chunks)
    assert "\n\n".join(chunks) == answer  # cut only at paragraph and fence boundaries
    assert not any(c.startswith("\n") or c.endswith("\n\n") for c in chunks)


def test_a_chunk_slack_refuses_as_too_long_is_split_smaller_and_nothing_is_posted_twice(
    stack, fake_slack, fake_llm, redis
):
    fake_slack.state.markdown_limit = 1_500  # msg_too_long well below the documented limit
    key = open_session(stack, fake_slack, fake_llm)
    answer = long_answer(6)
    post(redis, key, AnswerNotice(turn_id="t1", text=answer))
    chunks = wait_for(
        lambda: (
            (m := bot_messages(fake_slack, key.channel, key.thread_ts)[1:])
            and "".join(x["markdown_text"] for x in m).count("Paragraph 5") == 1
            and [x["markdown_text"] for x in m]
        ),
        what="the whole answer",
    )
    assert all(len(c) <= 1_500 for c in chunks) and all(fences_balanced(c) for c in chunks)
    words = [w for c in chunks for w in c.split() if w != "```" and w != "```python"]
    assert words == [w for w in answer.split() if w != "```" and w != "```python"]
    refused = posts(fake_slack, "msg_too_long")
    assert refused and len(posts(fake_slack)) == 1 + len(chunks)


def test_very_long_output_becomes_a_file_under_its_first_part(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    answer = long_answer(60)
    assert len(answer) > 30_000
    post(redis, key, AnswerNotice(turn_id="t1", text=answer))
    messages = wait_for(
        lambda: (m := bot_messages(fake_slack, key.channel, key.thread_ts)[1:]) and len(m) >= 2 and m,
        what="the first part and the file",
    )
    first, attached = messages
    assert answer.startswith(first["markdown_text"]) and len(first["markdown_text"]) <= 3_900
    assert attached["files"][0]["name"].endswith(".md") and "full answer" in attached["text"]
    assert fake_slack.state.uploaded[attached["files"][0]["id"]].decode() == answer


def test_one_unknown_result_notice_per_unknown_call(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    post(redis, key, UnknownResultNotice(tool_call_id="a", tool_name="shell", summary="make install"))
    post(redis, key, UnknownResultNotice(tool_call_id="b", tool_name="write_file", summary="src/app.py"))
    texts = wait_texts(fake_slack, key, 2)
    assert len(texts) == 2
    assert "`shell` `make install`" in texts[0] and "`write_file` `src/app.py`" in texts[1]
    assert all("unknown" in t and "Nothing was re-run." in t for t in texts)


def test_a_retried_delivery_posts_nothing_twice(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    post(redis, key, InfoNotice(text="first"))
    post(redis, key, AnswerNotice(turn_id="t1", text="the answer"))
    wait_texts(fake_slack, key, 2)
    SessionStore(redis, key).meta.set_delivered("0-0")  # as if the cursor write had been lost
    for _ in range(3):
        schedule_delivery(redis, key)
    post(redis, key, InfoNotice(text="last"))
    assert wait_texts(fake_slack, key, 3) == ["first", "the answer", "last"]
    assert texts_after_first(fake_slack, key) == ["first", "the answer", "last"]


def test_a_worker_that_dies_between_post_and_ledger_write_does_not_post_twice(
    stack, fake_slack, fake_llm, redis
):
    key = open_session(stack, fake_slack, fake_llm)
    fake_slack.inject(Fault("chat.postMessage", count=1, delay_s=60, after_work=True))
    post(redis, key, AnswerNotice(turn_id="t1", text="the answer"))
    wait_texts(fake_slack, key, 1)  # posted; the worker now waits for Slack's reply it never reads
    os.kill(stack.processes["worker0"].pid, 9)  # the worker dies (its RQ scheduler lives on)
    stack.spawn("worker1", [THREADLINE, "worker"])

    post(redis, key, InfoNotice(text="after the crash"))
    assert wait_texts(fake_slack, key, 2, timeout=40) == ["the answer", "after the crash"]
    assert len(posts(fake_slack)) == 1 + 2  # the first answer, the lost-ack answer, the notice
    assert fake_slack.calls("conversations.replies")  # it looked before posting again


def test_a_429_storm_on_post_message_still_posts_the_answer_exactly_once(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    fake_slack.inject(Fault("chat.postMessage", count=8, status=429, retry_after=1))
    post(redis, key, AnswerNotice(turn_id="t1", text="the final answer"))
    for _ in range(3):  # other deliveries queued meanwhile must wait out Retry-After too
        schedule_delivery(redis, key)
    assert wait_texts(fake_slack, key, 1, timeout=40) == ["the final answer"]
    limited = [c.at for c in fake_slack.calls("chat.postMessage") if c.outcome.startswith("fault:429")]
    assert len(limited) == 8
    assert all(b - a >= 0.95 for a, b in itertools.pairwise(limited))  # Retry-After honoured
    post(redis, key, InfoNotice(text="barrier"))
    assert wait_texts(fake_slack, key, 2) == ["the final answer", "barrier"]


def test_the_final_answer_survives_a_flood_of_progress_snapshots(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    store = SessionStore(redis, key)
    for index in range(40):
        store.post_notice(snapshot("running", [("shell", f"step {index}", "running")], at=index))
    store.post_notice(AnswerNotice(turn_id="t1", text="all done"))
    store.post_notice(snapshot("done", [("shell", "step 39", "done")], at=41))
    schedule_delivery(redis, key)
    wait_for(lambda: "all done" in texts_after_first(fake_slack, key), what="the answer")
    wait_for(lambda: "Done" in texts_after_first(fake_slack, key)[0], what="the final card")
    assert texts_after_first(fake_slack, key).count("all done") == 1
    assert len(fake_slack.calls("chat.update")) <= 2  # coalesced: only the latest snapshot is shown


def test_posts_to_one_channel_are_paced_across_workers(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(workers=2)
    first, second = open_session(stack, fake_slack, fake_llm), open_session(stack, fake_slack, fake_llm)
    settled = len(posts(fake_slack))
    for index in range(4):
        for key in (first, second):
            post(redis, key, InfoNotice(text=f"note {index}"))
    wait_for(lambda: len(posts(fake_slack)) >= settled + 8, timeout=30, what="eight posts")
    times = sorted(c.at for c in posts(fake_slack)[settled:])
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(gap >= 0.9 for gap in gaps[3:])  # a burst of three, then about one a second
    assert times[-1] - times[0] >= 4.5


def test_a_slow_post_in_one_thread_does_not_hold_up_another(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(SLACK_TIMEOUT_SECONDS="60")  # the slow post is waited for, not given up
    slow = open_session(stack, fake_slack, fake_llm)
    other = open_session(stack, fake_slack, fake_llm, owner="W333", channel="C222")
    fake_slack.inject(Fault("chat.postMessage", delay_s=60, after_work=True))
    post(redis, slow, InfoNotice(text="slow to be answered"))
    wait_texts(fake_slack, slow, 1)  # Slack has it; the deliverer waits for Slack's answer
    post(redis, other, InfoNotice(text="meanwhile"))
    # One deliverer at a time would post this only after the 60 s answer; DELIVERY_CONCURRENCY does not.
    assert wait_texts(fake_slack, other, 1, timeout=20) == ["meanwhile"]
