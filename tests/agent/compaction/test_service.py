import asyncio
import re

import pytest

from agent.compaction.prompt import COMPACTION_INSTRUCTION, MAX_SUMMARY_OUTPUT_TOKENS
from agent.compaction.service import (
    AppliedCompaction,
    CompactionFailedError,
    CompactionPlan,
    CompactionUnavailableError,
    StaleCompaction,
    apply_compaction,
    prepare_compaction,
    summarise,
)
from agent.compaction.shape import COMPACTION_SUMMARY_PREFIX
from agent.fold import HistoryFold
from agent.messages import Message, Origin, TextPart, ToolCall, assistant_message, tool_message, user_message
from agent.model.base import ModelRequest, ModelResponse, Usage
from agent.model.errors import (
    ContextOverflowError,
    EmptyResponseError,
    ModelHTTPError,
    RetryableModelError,
    StructureRejectedError,
    TruncatedResponseError,
)

WINDOW = 100_000


class FakeModel:
    """Answers from a script: an exception is raised, a response is returned; requests are kept."""

    name = "fake"

    def __init__(self, *script):
        self.script = list(script)
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        return step

    def history_sizes(self) -> list[int]:
        """How many history messages each request carried (the instruction excluded)."""
        return [len(request.messages) - 1 for request in self.requests]


class RecordingProjector:
    """Stands in for agent.projection.projector.project: returns its input, and remembers it."""

    def __init__(self):
        self.inputs: list[list[Message]] = []

    def __call__(self, history: list[Message]) -> list[Message]:
        self.inputs.append(list(history))
        return list(history)


class Sleeps:
    def __init__(self):
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def answer(text="Goal: ship it.", finish_reason="stop", usage=None) -> ModelResponse:
    return ModelResponse(
        message=Message(role="assistant", content=[TextPart(text=text)]),
        finish_reason=finish_reason,
        usage=usage,
    )


def chat(pairs: int) -> list[Message]:
    """user / plain assistant pairs: every assistant is a split point."""
    history = []
    for i in range(pairs):
        history += [user_message(f"question {i}"), assistant_message(f"answer {i}")]
    return history


def ten_each(_message: Message) -> int:
    return 10


def run(plan, model, **options):
    options.setdefault("project", RecordingProjector())
    options.setdefault("sleep", Sleeps())
    return asyncio.run(summarise(plan, model, **options))


def manual_plan(history, **options) -> CompactionPlan:
    return prepare_compaction(history, "manual", WINDOW, **options)


# -- planning --------------------------------------------------------------------------------


def test_prepare_refuses_an_empty_history():
    with pytest.raises(
        CompactionUnavailableError, match=re.escape("No messages to compact in current history.")
    ):
        prepare_compaction([], "manual", WINDOW)


def test_prepare_refuses_a_history_without_a_split_point():
    calling = assistant_message(tool_calls=[ToolCall(id="c", name="Read")])
    with pytest.raises(CompactionUnavailableError):
        prepare_compaction([user_message("go"), calling], "auto", WINDOW)


def test_auto_plan_keeps_the_tail_and_counts_tokens_before():
    history = chat(5)
    plan = prepare_compaction(history, "auto", 1000, request_overhead_tokens=7, estimate=ten_each)
    # At most four recent messages: the scan stops at the split after message 5.
    assert plan.compacted_count == 6
    assert plan.kept == history[6:] and plan.to_compact == history[:6]
    assert plan.tokens_before == 107


# -- the request -----------------------------------------------------------------------------


def test_the_request_is_the_projected_prefix_plus_the_instruction_and_no_tools():
    history = chat(3)
    projector = RecordingProjector()
    model = FakeModel(answer())
    run(manual_plan(history), model, project=projector, system="SYSTEM")
    request = model.requests[0]
    assert projector.inputs == [history]
    assert request.messages[:-1] == history
    assert request.messages[-1] == Message(role="user", content=[TextPart(text=COMPACTION_INSTRUCTION)])
    assert request.tools == [] and request.system == "SYSTEM"
    assert request.max_output_tokens == min(WINDOW, MAX_SUMMARY_OUTPUT_TOKENS)


def test_a_user_instruction_is_appended_to_the_instruction():
    model = FakeModel(answer())
    run(manual_plan(chat(2), instruction="  keep the test names  "), model)
    expected = COMPACTION_INSTRUCTION + "\nOptional user instruction:\nkeep the test names\n"
    assert model.requests[0].messages[-1].text() == expected


def test_dynamic_tool_schemas_are_not_sent():
    schema_only = Message(role="system", tools=[{"name": "Late"}])
    with_text = Message(role="system", content=[TextPart(text="context")], tools=[{"name": "Late"}])
    history = [user_message("go"), schema_only, with_text, assistant_message("ok")]
    projector = RecordingProjector()
    run(manual_plan(history), FakeModel(answer()), project=projector)
    sent = projector.inputs[0]
    assert [m.role for m in sent] == ["user", "system", "assistant"]
    assert sent[1].tools is None and sent[1].text() == "context"


def test_a_history_ending_in_an_open_exchange_reaches_the_projector_whole():
    calling = assistant_message(tool_calls=[ToolCall(id="a", name="Read"), ToolCall(id="b", name="Read")])
    history = [user_message("go"), calling, tool_message("a", "done")]
    plan = CompactionPlan(
        source="manual", history=tuple(history), compacted_count=3, max_size=WINDOW, tokens_before=0
    )
    projector = RecordingProjector()
    run(plan, FakeModel(answer()), project=projector)
    assert projector.inputs == [history]


def test_a_history_ending_in_an_open_exchange_goes_out_paired():
    calling = assistant_message(tool_calls=[ToolCall(id="a", name="Read"), ToolCall(id="b", name="Read")])
    history = [user_message("go"), calling, tool_message("a", "done")]
    plan = CompactionPlan(
        source="manual", history=tuple(history), compacted_count=3, max_size=WINDOW, tokens_before=0
    )
    model = FakeModel(answer())
    asyncio.run(summarise(plan, model, sleep=Sleeps()))  # the real projection
    sent = model.requests[0].messages
    assert [(m.role, m.tool_call_id) for m in sent[1:4]] == [
        ("assistant", None),
        ("tool", "a"),
        ("tool", "b"),
    ]


# -- the result ------------------------------------------------------------------------------


def test_result_fields():
    history = chat(4)
    plan = prepare_compaction(history, "auto", WINDOW, request_overhead_tokens=100)
    result = run(plan, FakeModel(answer("  the note  ")))
    assert result.summary == "the note"
    assert result.context_summary == COMPACTION_SUMMARY_PREFIX + "\nthe note"
    assert (result.compacted_count, result.kept_count, result.dropped_count) == (4, 4, 0)
    assert result.source == "auto" and result.tokens_before == plan.tokens_before
    kept_tokens = 2 * (1 + 3) + 2 * (3 + 2)  # "question N": user 1 + 3; "answer N": assistant 3 + 2
    summary_tokens = -(-len(result.context_summary) // 4)
    assert result.tokens_after == 100 + summary_tokens + kept_tokens


def test_measured_output_tokens_replace_the_summary_estimate():
    plan = prepare_compaction(chat(4), "auto", WINDOW)
    result = run(plan, FakeModel(answer("note", usage=Usage(input_tokens=50, output_tokens=3))))
    assert result.summary_output_tokens == 3
    assert result.tokens_after == 3 + 2 * (4 + 5)


def test_the_record_carries_the_result_and_the_wire_range():
    result = run(manual_plan(chat(2)), FakeModel(answer()))
    record = result.record(wire_start="1-0", wire_end="9-0")
    assert (record.summary, record.context_summary) == (result.summary, result.context_summary)
    assert (record.compacted_count, record.kept_count, record.source) == (4, 0, "manual")
    assert (record.wire_start, record.wire_end, record.dropped_count) == ("1-0", "9-0", None)


# -- failure paths ---------------------------------------------------------------------------


def test_overflow_shrinks_to_70_50_and_35_percent_then_gives_up():
    history = chat(20)  # 40 messages of 10 tokens
    plan = manual_plan(history, estimate=ten_each)
    overflows = []
    model = FakeModel(*[ContextOverflowError("too long")] * 5)
    with pytest.raises(CompactionFailedError) as failure:
        run(plan, model, estimate=ten_each, on_overflow=overflows.append)
    assert isinstance(failure.value.__cause__, ContextOverflowError)
    assert str(failure.value) == "too long"  # the provider's words, once: the notice adds its own prefix
    # 400 → keep 280 (28 messages), 280 → 140 (14), 140 → 49 (4); the 4th overflow is final.
    assert model.history_sizes() == [40, 28, 14, 4]
    assert len(overflows) == 4 and overflows[0] > overflows[1] > overflows[2] > overflows[3]


def test_overflow_then_success_reports_what_was_dropped():
    plan = manual_plan(chat(10), estimate=ten_each)
    model = FakeModel(ContextOverflowError("x"), ContextOverflowError("x"), answer())
    result = run(plan, model, estimate=ten_each)
    assert model.history_sizes() == [20, 14, 7]
    assert result.dropped_count == 13 and result.compacted_count == 20
    # The newest messages survive the shrink.
    assert model.requests[-1].messages[:-1] == chat(10)[13:]


def test_overflow_on_a_single_message_is_final():
    plan = CompactionPlan(
        source="manual",
        history=(assistant_message("only"),),
        compacted_count=1,
        max_size=WINDOW,
        tokens_before=0,
    )
    model = FakeModel(ContextOverflowError("x"))
    with pytest.raises(CompactionFailedError):
        run(plan, model)
    assert len(model.requests) == 1


def test_a_shrink_never_starts_with_a_tool_result():
    calling = assistant_message(tool_calls=[ToolCall(id="a", name="Read"), ToolCall(id="b", name="Read")])
    history = [user_message("go"), calling, tool_message("a", "1"), tool_message("b", "2"), *chat(3)]
    plan = manual_plan(history, estimate=ten_each)
    model = FakeModel(ContextOverflowError("x"), answer())
    result = run(plan, model, estimate=ten_each)
    # 100 tokens → keep 70: messages 3.. would start with tool b, so it goes too.
    assert model.requests[1].messages[0].role == "user"
    assert result.dropped_count == 4


@pytest.mark.parametrize(
    "failure",
    [TruncatedResponseError("cut"), answer("half a note", finish_reason="length")],
    ids=["error", "finish-reason"],
)
def test_a_truncated_summary_drops_the_oldest_and_retries(failure):
    plan = manual_plan(chat(4))
    model = FakeModel(failure, answer())
    result = run(plan, model)
    assert model.history_sizes() == [8, 7]
    assert result.dropped_count == 1


@pytest.mark.parametrize(
    "failure", [EmptyResponseError("nothing"), answer("   ")], ids=["error", "blank-text"]
)
def test_an_empty_summary_drops_the_oldest_and_retries(failure):
    model = FakeModel(failure, answer())
    result = run(manual_plan(chat(4)), model)
    assert model.history_sizes() == [8, 7] and result.dropped_count == 1


def test_drop_oldest_also_drops_the_leading_tool_results():
    calling = assistant_message(tool_calls=[ToolCall(id="a", name="Read")])
    history = [calling, tool_message("a", "1"), *chat(2)]
    model = FakeModel(answer(""), answer())
    result = run(manual_plan(history), model)
    assert model.history_sizes() == [6, 4] and result.dropped_count == 2


def test_a_filtered_empty_summary_is_not_retried():
    model = FakeModel(answer("", finish_reason="content_filter"))
    with pytest.raises(CompactionFailedError) as failure:
        run(manual_plan(chat(4)), model)
    assert isinstance(failure.value.__cause__, EmptyResponseError)
    assert len(model.requests) == 1


def test_truncated_and_empty_retries_stop_after_five():
    model = FakeModel(*[TruncatedResponseError("cut")] * 6)
    with pytest.raises(CompactionFailedError):
        run(manual_plan(chat(10)), model)
    assert model.history_sizes() == [20, 19, 18, 17, 16, 15]


def test_retryable_errors_back_off_then_succeed():
    sleeps = Sleeps()
    model = FakeModel(RetryableModelError("429"), RetryableModelError("503", retry_after=7.5), answer())
    result = run(manual_plan(chat(2)), model, sleep=sleeps)
    assert sleeps.delays == [1.0, 7.5]
    assert model.history_sizes() == [4, 4, 4] and result.dropped_count == 0


def test_retryable_errors_give_up_after_five_attempts():
    sleeps = Sleeps()
    model = FakeModel(*[RetryableModelError("503")] * 5)
    with pytest.raises(CompactionFailedError) as failure:
        run(manual_plan(chat(2)), model, sleep=sleeps)
    assert isinstance(failure.value.__cause__, RetryableModelError)
    assert len(model.requests) == 5 and sleeps.delays == [1.0, 2.0, 4.0, 8.0]


def test_the_retry_counter_resets_after_a_shrink():
    transient = [RetryableModelError("503")] * 4
    model = FakeModel(*transient, ContextOverflowError("x"), *transient, answer())
    run(manual_plan(chat(10)), model, estimate=ten_each)
    assert len(model.requests) == 10


def test_authentication_errors_pass_through_unchanged():
    with pytest.raises(ModelHTTPError) as failure:
        run(manual_plan(chat(2)), FakeModel(ModelHTTPError(401, "bad key")))
    assert failure.value.status == 401


def test_other_model_errors_fail_the_compaction():
    with pytest.raises(CompactionFailedError):
        run(manual_plan(chat(2)), FakeModel(StructureRejectedError("no")))


# -- applying --------------------------------------------------------------------------------


def summarised(history):
    plan = prepare_compaction(history, "auto", WINDOW)
    return plan, run(plan, FakeModel(answer("note")))


def test_apply_replaces_the_prefix_and_keeps_the_tail_objects():
    history = chat(4)
    plan, result = summarised(history)
    applied = apply_compaction(history, plan.history, result)
    assert isinstance(applied, AppliedCompaction)
    summary, *tail = applied.history
    assert summary.role == "user" and summary.origin == Origin(kind="compaction_summary")
    assert summary.text() == result.context_summary
    assert all(now is then for now, then in zip(tail, history[4:], strict=True))


def test_apply_matches_what_fold_rebuilds_from_the_record():
    history = chat(4)
    plan, result = summarised(history)
    applied = apply_compaction(history, plan.history, result)
    folder = HistoryFold(history)
    folder.apply(applied.result.record())
    assert folder.history == applied.history


def test_apply_after_real_user_input_was_appended():
    history = chat(4)
    plan, result = summarised(history)
    steer = user_message("also check the docs")
    applied = apply_compaction([*history, steer], plan.history, result)
    assert isinstance(applied, AppliedCompaction)
    assert applied.history[-1] is steer
    assert applied.result.kept_count == result.kept_count + 1
    assert applied.result.tokens_after == result.tokens_after + 1 + 5  # user + 19 chars


@pytest.mark.parametrize(
    "change",
    ["assistant appended", "reminder appended", "prefix replaced", "shrank"],
)
def test_a_stale_summary_is_refused(change):
    history = chat(4)
    plan, result = summarised(history)
    current = list(history)
    if change == "assistant appended":
        current.append(assistant_message("more work"))
    elif change == "reminder appended":
        current.append(user_message("<system-reminder>x</system-reminder>", origin=Origin(kind="injection")))
    elif change == "prefix replaced":
        current[1] = Message.model_validate(history[1].model_dump())
    else:
        current.pop()
    outcome = apply_compaction(current, plan.history, result)
    assert isinstance(outcome, StaleCompaction) and outcome.reason


def test_a_history_reloaded_from_redis_is_matched_by_wire_id():
    history = [m.model_copy(update={"id": f"{i + 1}-0"}) for i, m in enumerate(chat(4))]
    plan, result = summarised(history)
    reloaded = [Message.model_validate(m.model_dump()) for m in history]
    assert isinstance(apply_compaction(reloaded, plan.history, result), AppliedCompaction)
    renumbered = [m.model_copy(update={"id": f"{i + 100}-0"}) for i, m in enumerate(reloaded)]
    assert isinstance(apply_compaction(renumbered, plan.history, result), StaleCompaction)
