"""The loop's live text reaching Redis: the real loop, model client and fake provider over HTTP,
`LiveSteps` on a real Redis (jobs.turn.live)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.loop.ports import ToolFinished
from agent.messages import ToolCall
from agent.model.openai import OpenAICompatibleModel
from agent.model.retrying import RetryingModel
from agent.testing import FakeLLM, Reply
from jobs.keys import SessionKey
from jobs.session import live
from jobs.session.notices import LiveNotice
from jobs.session.store import SessionStore
from jobs.turn.live import UNKNOWN_OUTPUT, LiveSteps, TeeReporter
from tests.agent.loop.harness import Heard, MemorySink, run_turn

ANSWER = "The answer arrives sixteen characters at a time, slowly enough to be seen growing."


def session(redis) -> SessionStore:
    return SessionStore(redis, SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100"))


def test_each_step_is_published_as_the_model_writes_it(fake_llm: FakeLLM, tmp_path: Path, redis):
    store = session(redis)
    fake_llm.script(
        Reply(text="Let me look.", tool_calls=[("c1", "list_dir", '{"path": "."}')]),
        Reply(text=ANSWER, text_every_s=0.1),
    )
    steps = LiveSteps(store, "t1")
    seen: list[str] = []

    async def watch(loop) -> None:
        while not (record := live.read(store, "t1", 2)) or not record.done:
            if record is not None and record.text not in seen:
                seen.append(record.text)
            await asyncio.sleep(0.02)

    sink = MemorySink()
    sink.append_user("look around")
    reporter = TeeReporter(Heard(), steps)
    outcome = run_turn(
        sink,
        fake_llm.base_url,
        tmp_path,
        reporter=reporter,
        live=steps,
        during=watch,
        settle=steps.publisher.flush,
    )

    assert outcome.answer == ANSWER
    first, second = live.read(store, "t1", 1), live.read(store, "t1", 2)
    assert first.text == "Let me look." and first.done and not first.final
    assert [(t.id, t.title, t.status, t.details) for t in first.tasks] == [
        ("c1", "list_dir", "complete", "path: .")
    ]
    assert second.text == ANSWER and second.done and second.final
    # growing text was visible before the step ended, in fewer writes than the 6 pieces
    assert len(seen) >= 2 and all(ANSWER.startswith(part) for part in seen) and len(seen) < 6
    places = [n for _, n in store.notices() if isinstance(n, LiveNotice)]
    assert [(n.turn_id, n.step) for n in places] == [("t1", 1), ("t1", 2)]  # one entry per step, in order
    assert any(isinstance(e, ToolFinished) for e in reporter.card.events)  # the card heard them too


def test_a_step_asked_again_starts_its_text_over_and_open_calls_end_unknown(redis):
    store = session(redis)
    steps = LiveSteps(store, "t1")

    async def main() -> None:
        listener = steps.listener(1)
        listener.on_text("half of a fir")
        listener.on_restart()
        listener.on_text("Second")
        await steps.publisher.flush()

    asyncio.run(main())
    record = live.read(store, "t1", 1)
    assert record.attempt == 1 and record.text in ("", "Second")
    steps.written(1, "Second try.", [ToolCall(id="c9", name="shell", arguments='{"command": "make"}')])
    steps.close()
    record = live.read(store, "t1", 1)
    assert record.text == "Second try." and record.done and not record.final
    assert [(t.status, t.output) for t in record.tasks] == [("error", UNKNOWN_OUTPUT)]


def test_a_parked_turn_leaves_its_calls_waiting(redis):
    store = session(redis)
    steps = LiveSteps(store, "t1")
    steps.written(1, "", [ToolCall(id="c1", name="shell", arguments='{"command": "rm -rf build"}')])
    steps.close(parked=True)
    record = live.read(store, "t1", 1)
    assert record.done and [t.status for t in record.tasks] == ["pending"]


def test_a_step_without_text_or_calls_places_nothing(redis):
    store = session(redis)
    LiveSteps(store, "t1").written(1, "", [])
    assert store.notices() == [] and live.read(store, "t1", 1) is None


def test_a_stream_cut_and_retried_starts_the_step_over(fake_llm: FakeLLM, tmp_path: Path, redis):
    store = session(redis)
    fake_llm.script(Reply(text=ANSWER, cut_stream_after=3), Reply(text=ANSWER))

    async def at_once(_: float) -> None:
        return None

    model = RetryingModel(OpenAICompatibleModel(fake_llm.base_url, "fake-model"), sleep=at_once)
    sink = MemorySink()
    sink.append_user("again")
    steps = LiveSteps(store, "t1")
    outcome = run_turn(
        sink, fake_llm.base_url, tmp_path, model=model, live=steps, settle=steps.publisher.flush
    )

    record = live.read(store, "t1", 1)
    assert outcome.answer == ANSWER and record.text == ANSWER and record.attempt == 1 and record.final
