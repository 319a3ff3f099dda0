"""The context kept under the window by real turns on real workers: pruning, summaries and their
checkpoint, the provider's overflow answer, and the thread told of each in one line."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.compaction.prompt import COMPACTION_INSTRUCTION
from agent.testing import FakeLLM, Reply, calls, text
from gateway.sandbox.stack import Stack
from jobs.keys import checkpoint_key
from tests.e2e.agents import content_text, wait_for_answer
from tests.e2e.turns import Session
from tests.polling import wait_for

# With a 60,000-token window the trigger is min(85 %, window − 50,000) = 10,000 tokens; the
# request overhead (system prompt and tool declarations) is about 2,400 of them.
SMALL_WINDOW = "60000"
LINE = "the quick brown fox jumps over the lazy dog while the build keeps failing again\n"  # 80 chars
SUMMARY = "SUMMARY: two files were read for the user; nothing else happened."


def lines(count: int) -> str:
    return LINE * count


class Model:
    """Answers each user turn `TURN-n` by reading the file named for it, then saying `done n`;
    answers a summary request with SUMMARY. Files are written when the session's key is known."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files
        self.workspace: Path | None = None
        self.ready = threading.Event()
        self.summaries: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.ready.wait(10)
        last = body["messages"][-1]
        if COMPACTION_INSTRUCTION[:60] in content_text(last):
            self.summaries.append(body)
            return text(SUMMARY)
        if last["role"] == "tool":
            return text(f"done {last['tool_call_id']}")
        turn = content_text(last).rsplit("TURN-", 1)[-1].split()[0]
        name = f"turn{turn}.txt"
        if name not in self.files:
            return text(f"done {turn}")
        return calls((f"r{turn}", "read_file", {"path": name, "limit": 2000}))

    def start(self, stack_workspaces: Path, session: Session) -> None:
        key = session.key
        self.workspace = stack_workspaces / key.team / key.channel / key.thread_ts
        self.workspace.mkdir(parents=True, exist_ok=True)
        for name, content in self.files.items():
            (self.workspace / name).write_text(content)
        self.ready.set()


def start(
    make_stack: Callable[..., Stack], fake_llm: FakeLLM, model: Model, window: str = SMALL_WINDOW
) -> None:
    fake_llm.default = model
    make_stack(LLM_CONTEXT_WINDOW=window)


def converse(
    make_stack: Callable[..., Stack], fake_llm: FakeLLM, fake_slack, redis, tmp_path: Path, model: Model,
    *said: tuple[str, str], window: str = SMALL_WINDOW,
) -> Session:  # fmt: skip
    """A session on `model` through real turns: each (words, answer) said in turn, its answer awaited."""
    start(make_stack, fake_llm, model, window)
    (words, answer), *rest = said
    session = Session(redis, fake_slack, words)
    model.start(tmp_path / "workspaces", session)
    wait_for_answer(session, answer)
    for words, answer in rest:
        session.say(words)
        wait_for_answer(session, answer)
    return session


def test_old_tool_outputs_are_pruned_and_the_thread_says_so_in_one_line(
    make_stack, fake_llm: FakeLLM, fake_slack, redis, tmp_path: Path
):
    model = Model({"turn1.txt": lines(260), "turn3.txt": lines(150)})
    session = converse(
        make_stack, fake_llm, fake_slack, redis, tmp_path, model,
        ("TURN-1 read it", "done r1"), ("TURN-2 nothing to read", "done 2"),
        ("TURN-3 read the next one", "done r3"),
    )  # fmt: skip

    pruned = [m for m in session.bot_texts() if "Pruned" in m]
    assert len(pruned) == 1 and "Pruned 1 old tool output" in pruned[0]
    assert [r for r in session.wire() if r["type"] == "context.prune_tool_results"]
    last_request = fake_llm.accepted()[-1]
    first_result = next(m for m in last_request["messages"] if m.get("tool_call_id") == "r1")
    assert LINE.strip() not in first_result["content"]  # the model now sees a pointer, not the file
    assert model.summaries == []


def test_an_automatic_summary_writes_its_checkpoint_and_the_thread_says_so(
    make_stack, fake_llm: FakeLLM, fake_slack, redis, tmp_path: Path
):
    model = Model({"turn1.txt": lines(260), "turn2.txt": lines(150)})
    session = converse(
        make_stack, fake_llm, fake_slack, redis, tmp_path, model,
        ("TURN-1 read it", "done r1"), ("TURN-2 read the next one", "done r2"),
    )  # fmt: skip

    assert len(model.summaries) == 1  # both turns are protected from pruning: a summary instead
    assert redis.exists(checkpoint_key(session.key))
    compacted = [m for m in session.bot_texts() if m.startswith(":compression: Compacted")]
    assert len(compacted) == 1
    assert SUMMARY in str(fake_llm.accepted()[-1]["messages"])


def test_the_providers_overflow_answer_is_recovered_by_a_summary_and_the_turn_answers(
    make_stack, fake_llm: FakeLLM, fake_slack, redis, tmp_path: Path
):
    """The configured window is generous, but the provider's is small: its overflow answer is the
    only sign. The window it showed is remembered, the context compacted, the request sent again."""
    fake_llm.context_window = 7_000
    model = Model({"turn1.txt": lines(150), "turn2.txt": lines(260)})
    session = converse(
        make_stack, fake_llm, fake_slack, redis, tmp_path, model,
        ("TURN-1 read it", "done r1"), ("TURN-2 read the next one", "done r2"), window="200000",
    )  # fmt: skip
    overflows = [reason for _, reason in fake_llm.rejected if "maximum context length" in reason]
    assert len(overflows) == 1 and len(model.summaries) == 1
    assert redis.exists(checkpoint_key(session.key))
    assert len([m for m in session.bot_texts() if m.startswith(":compression: Compacted")]) == 1
    retried = fake_llm.accepted()[-1]
    assert SUMMARY in str(retried["messages"]) and "r2" in str(retried["messages"])


def test_the_next_turn_starts_from_the_checkpoint_of_an_automatic_summary(
    make_stack, fake_llm: FakeLLM, fake_slack, redis, tmp_path: Path
):
    model = Model({"turn1.txt": lines(260), "turn2.txt": lines(150)})
    session = converse(
        make_stack, fake_llm, fake_slack, redis, tmp_path, model,
        ("TURN-1 read it", "done r1"), ("TURN-2 read the next one", "done r2"),
    )  # fmt: skip
    assert len(model.summaries) == 1

    checkpoint = json.loads(redis.get(checkpoint_key(session.key)))
    applied = next(r for r in session.wire() if r["type"] == "context.apply_compaction")
    assert applied["source"] == "auto"
    summary = checkpoint["history"][0]
    assert summary["origin"]["kind"] == "compaction_summary" and SUMMARY in summary["content"][0]["text"]
    assert checkpoint["through"] >= applied["id"]

    session.say("TURN-3 nothing to read")
    wait_for_answer(session, "done 3")
    sent = fake_llm.accepted()[-1]["messages"][1:]  # after the system prompt
    assert sent[0] == {"role": "user", "content": summary["content"][0]["text"]}
    assert not [
        m for m in sent if content_text(m).endswith("TURN-1 read it") or m.get("tool_call_id") == "r1"
    ]
    assert content_text(sent[-1]).endswith("TURN-3 nothing to read")
    assert len(model.summaries) == 1


def chat_then(make_stack, fake_llm: FakeLLM, fake_slack, redis, turns: int) -> Session:
    """A session of `turns` answered exchanges (a history with room to summarise)."""
    fake_llm.default = lambda body: text(f"noted {len(fake_llm.requests)}")
    make_stack()
    session = Session(redis, fake_slack, "remember item 0")
    for n in range(1, turns + 1):
        wait_for(lambda n=n: session.state() == "idle" and len(session.bot_texts()) == n, what=f"answer {n}")
        if n < turns:
            session.say(f"remember item {n}")
    return session


def test_a_provider_that_refuses_even_the_summary_ends_the_turn_at_the_first_overflow(
    make_stack, fake_llm: FakeLLM, fake_slack, redis
):
    session = chat_then(make_stack, fake_llm, fake_slack, redis, turns=4)
    fake_llm.context_window = 50  # from now on every request, a summary's too, is over the window
    rejected = len(fake_llm.rejected)
    session.say("one more thing")
    wait_for(lambda: session.state() == "failed", timeout=30, what="the turn to fail")

    refused = [body for body, _ in fake_llm.rejected[rejected:]]
    asked_for_summary = [b for b in refused if COMPACTION_INSTRUCTION[:60] in content_text(b["messages"][-1])]
    assert len(refused) - len(asked_for_summary) == 1  # the step was not sent again
    assert asked_for_summary and all("maximum context length" in r for _, r in fake_llm.rejected[rejected:])
    assert not [r for r in session.wire() if r["type"] == "context.apply_compaction"]
    said = "the conversation no longer fits the model's context window and compaction failed"
    wait_for(lambda: any(said in t for t in session.bot_texts()), what="the thread told why")


OVERFLOW = Reply(
    status=400,
    error={
        "message": "This model's maximum context length is 4000 tokens. However, your messages resulted "
        "in 9000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    },
)


def test_a_provider_that_always_overflows_is_compacted_for_until_nothing_is_left_then_the_turn_fails(
    make_stack, fake_llm: FakeLLM, fake_slack, redis
):
    """Every step request is refused as too long, every summary answered. After each overflow the
    turn compacts and sends the step again; once only the summary and the new message are left
    (the second compaction here, before the three-attempt backstop) it ends, saying why: never a loop."""
    session = chat_then(make_stack, fake_llm, fake_slack, redis, turns=16)
    summaries: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> Reply:
        if COMPACTION_INSTRUCTION[:60] in content_text(body["messages"][-1]):
            summaries.append(body)
            return text(SUMMARY)
        steps.append(body)
        return OVERFLOW

    fake_llm.default = model
    session.say("one more thing")
    wait_for(lambda: session.state() == "failed", timeout=60, what="the turn to give up")
    applied = [r for r in session.wire() if r["type"] == "context.apply_compaction"]
    assert len(summaries) == len(applied) == 2
    assert len(steps) == 3  # the step, then once after each compaction
    assert [len(s["messages"]) for s in steps] == [34, 5, 3]  # each smaller: system, summary, … , the new one
    said = "the conversation no longer fits the model's context window and compaction failed"
    wait_for(lambda: any(said in t for t in session.bot_texts()), what="the thread told why")
