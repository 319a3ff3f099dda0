from agent.compaction.pruning import PRUNED_MARKER, plan_tool_result_prune, pruned_pointer
from agent.compaction.rules import CompactionConfig
from agent.fold import HistoryFold
from agent.messages import (
    ImageURLPart,
    MediaURL,
    Message,
    Origin,
    TextPart,
    ToolCall,
    assistant_message,
    tool_message,
    user_message,
)
from agent.tokens import estimate_message

RATIO_ONLY = CompactionConfig(reserved_context_size=0)  # trigger at exactly 85 % of the window
BIG = "x" * 4000  # 1000 tokens


def turn(number: int, output: str = BIG) -> list[Message]:
    call_id = f"c{number}"
    result = tool_message(call_id, output).model_copy(update={"id": f"{number}-3"})
    return [
        user_message(f"task {number}"),
        assistant_message(tool_calls=[ToolCall(id=call_id, name="Read", arguments="{}")]),
        result,
        assistant_message(f"done {number}"),
    ]


def history_of(turns: int) -> list[Message]:
    return [message for number in range(1, turns + 1) for message in turn(number)]


def total(history: list[Message]) -> int:
    return sum(estimate_message(message) for message in history)


def window_for(used: int) -> int:
    """The smallest window whose trigger (85 %) is still above `used`."""
    return int(used / 0.85) + 2


def test_nothing_to_do_under_the_trigger():
    history = history_of(4)
    assert plan_tool_result_prune(history, window_for(total(history)), RATIO_ONLY) is None


def test_prunes_oldest_first_and_stops_once_under_the_trigger():
    history = history_of(5)  # turns 4 and 5 are protected
    used = total(history)
    # Over the trigger by a bit more than one output: two prunes are needed, not three.
    window = window_for(used - 1500)
    plan = plan_tool_result_prune(history, window, RATIO_ONLY)
    assert plan is not None
    assert list(plan.replacements) == ["c1", "c2"]
    assert plan.tokens_before == used
    assert plan.tokens_after < window * 0.85 <= plan.tokens_before


def test_never_prunes_inside_the_last_two_user_turns():
    history = history_of(3)  # only turn 1 is outside the last two turns
    used = total(history)
    assert plan_tool_result_prune(history, window_for(used - 2500), RATIO_ONLY) is None
    plan = plan_tool_result_prune(history, window_for(used - 500), RATIO_ONLY)
    assert plan is not None and list(plan.replacements) == ["c1"]


def test_injections_are_not_user_turns():
    reminder = user_message("<system-reminder>x</system-reminder>", origin=Origin(kind="injection"))
    history = [*turn(1), *turn(2), reminder, *turn(3)[1:]]
    # Real user turns: 1 and 2, both protected; the reminder does not start a turn.
    assert plan_tool_result_prune(history, window_for(total(history) - 500), RATIO_ONLY) is None


def test_fewer_than_two_user_turns_protects_everything():
    history = history_of(1)
    assert plan_tool_result_prune(history, 10, RATIO_ONLY) is None


def test_already_pruned_outputs_are_skipped():
    history = history_of(4)
    first = plan_tool_result_prune(history, window_for(total(history) - 500), RATIO_ONLY)
    folder = HistoryFold(history)
    folder.apply(first.record())
    pruned = folder.history
    second = plan_tool_result_prune(pruned, window_for(total(pruned) - 500), RATIO_ONLY)
    assert list(first.replacements) == ["c1"] and list(second.replacements) == ["c2"]


def test_applying_the_record_changes_only_contents_and_keeps_pairing():
    history = history_of(5)
    plan = plan_tool_result_prune(history, window_for(total(history) - 1500), RATIO_ONLY)
    folder = HistoryFold(history)
    folder.apply(plan.record())
    after = folder.history
    shape = [(m.role, m.tool_call_id, [c.id for c in m.tool_calls], m.id) for m in after]
    assert shape == [(m.role, m.tool_call_id, [c.id for c in m.tool_calls], m.id) for m in history]
    changed = [m.tool_call_id for before, m in zip(history, after, strict=True) if before != m]
    assert changed == ["c1", "c2"]
    assert total(after) == plan.tokens_after


def test_request_overhead_counts_toward_the_trigger():
    history = history_of(4)
    window = window_for(total(history))
    assert plan_tool_result_prune(history, window, RATIO_ONLY, request_overhead_tokens=500) is not None


def test_pointer_names_tool_call_size_and_wire_entry():
    result = tool_message("c7", "abc\ndef").model_copy(update={"id": "17-0"})
    assert pruned_pointer(result, "Grep") == (
        "[tool output pruned] Grep call c7: 7 chars; full output in wire entry 17-0"
    )


def test_pointer_names_the_spill_file():
    text = (
        "Tool output exceeded 50000 characters\noutput_path: /ws/.threadline/tool-results/c7.txt\n[preview]"
    )
    result = tool_message("c7", text).model_copy(update={"id": "17-0"})
    assert pruned_pointer(result, "Bash").endswith(
        f"{len(text)} chars; full output in wire entry 17-0 and file /ws/.threadline/tool-results/c7.txt"
    )
    bare = tool_message("c8", "see .threadline/tool-results/c8.txt for more")
    assert pruned_pointer(bare, None) == (
        f"{PRUNED_MARKER} unknown tool call c8: 44 chars; full output in file .threadline/tool-results/c8.txt"
    )


def test_a_long_run_without_whitespace_is_searched_for_a_spill_path_in_one_pass():
    # A tool's output is anyone's text: each position of "a.a.a…" once started a scan to the
    # run's end for the spill directory (quadratic: 2 MB took hours, on compaction's path).
    run = "a." * 1_000_000
    result = tool_message("c1", run).model_copy(update={"id": "17-0"})
    assert pruned_pointer(result, "Read").endswith(f"{len(run)} chars; full output in wire entry 17-0")
    glued = tool_message("c2", run + "/ws/.threadline/tool-results/c2.txt more")
    assert pruned_pointer(glued, "Read").endswith(f"file {run}/ws/.threadline/tool-results/c2.txt")


def test_pointer_without_any_location_says_so():
    picture = ImageURLPart(image_url=MediaURL(url="data:image/png;base64,AAAA"))
    image = Message(role="tool", tool_call_id="c9", content=[TextPart(text="ab"), picture])
    assert pruned_pointer(image, "Read") == (
        "[tool output pruned] Read call c9: 2 chars and 1 media part; full output no longer available"
    )


def test_a_call_answered_twice_is_left_alone():
    history = history_of(4)
    duplicate = tool_message("c1", BIG)
    history.insert(3, duplicate)
    plan = plan_tool_result_prune(history, window_for(total(history) - 500), RATIO_ONLY)
    assert plan is not None and "c1" not in plan.replacements
