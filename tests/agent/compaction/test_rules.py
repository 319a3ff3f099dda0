import math

import pytest
from pydantic import ValidationError

from agent.compaction.rules import (
    CompactionConfig,
    can_split_after,
    compute_compact_count,
    effective_window,
    observed_window,
    reduce_compact_on_overflow,
    should_block,
    should_compact,
)
from agent.messages import Message, ToolCall, assistant_message, tool_message, user_message


def seed_history() -> list[Message]:
    """The seed experiment of context-core.md §3.4: user, answer, user, two parallel calls, final answer."""
    calls = [ToolCall(id="a", name="Lookup", arguments="{}"), ToolCall(id="b", name="Lookup", arguments="{}")]
    return [
        user_message("old user"),
        assistant_message("old answer"),
        user_message("new user"),
        assistant_message(tool_calls=calls),
        tool_message("a", "result a"),
        tool_message("b", "result b"),
        assistant_message("final answer"),
    ]


def ten_each(_message: Message) -> int:
    return 10


def test_seed_experiment():
    history = seed_history()
    four = CompactionConfig(max_recent_messages=4)
    five = CompactionConfig(max_recent_messages=5)
    assert compute_compact_count(history, "auto", 1000, four, ten_each) == 6
    assert compute_compact_count(history, "auto", 1000, five, ten_each) == 2
    # The conditions the spec lists for those results.
    assert compute_compact_count(history, "auto", 200, five, ten_each) == 6
    assert compute_compact_count(history, "auto", 50, four, ten_each) == 2
    assert compute_compact_count(history, "auto", 60, four, ten_each) == 6


def test_a_hundred_thousand_window_triggers_at_fifty_thousand_by_the_reserve():
    assert not should_compact(49_999, 100_000)
    assert should_compact(50_000, 100_000)
    assert should_block(50_000, 100_000)


@pytest.mark.parametrize("reserve", [0, -1, 100_000, 150_000])
def test_a_reserve_outside_the_window_disables_the_reserve_rule(reserve):
    settings = CompactionConfig(reserved_context_size=reserve)
    assert not should_compact(84_999, 100_000, settings)
    assert should_compact(85_000, 100_000, settings)


@pytest.mark.parametrize("window", [0, -5])
def test_no_window_never_triggers(window):
    assert not should_compact(10**9, window)
    assert not should_block(10**9, window)


def test_block_uses_its_own_ratio():
    settings = CompactionConfig(trigger_ratio=0.5, block_ratio=0.9, reserved_context_size=0)
    assert should_compact(500, 1000, settings) and not should_block(500, 1000, settings)
    assert should_block(900, 1000, settings)


def test_config_defaults_and_infinity():
    settings = CompactionConfig()
    assert (settings.trigger_ratio, settings.block_ratio, settings.reserved_context_size) == (
        0.85,
        0.85,
        50_000,
    )
    assert settings.max_compaction_per_turn == math.inf and settings.max_recent_user_messages == math.inf
    assert (settings.max_overflow_compaction_attempts, settings.max_recent_messages) == (3, 4)
    assert (settings.max_recent_size_ratio, settings.min_overflow_reduction_ratio) == (0.2, 0.05)
    parsed = CompactionConfig.model_validate(
        {"max_recent_user_messages": "Infinity", "max_recent_messages": 2}
    )
    assert parsed.max_recent_user_messages == math.inf and parsed.max_recent_messages == 2
    assert '"max_compaction_per_turn":"Infinity"' in settings.model_dump_json()


def test_config_rejects_unknown_keys():
    with pytest.raises(ValidationError):
        CompactionConfig.model_validate({"maxRecentMessages": 3})


def test_no_split_outside_the_list():
    history = seed_history()
    assert not can_split_after(history, -1)
    assert not can_split_after(history, len(history))
    assert not can_split_after([], 0)


def test_a_tool_run_without_its_caller_is_not_open():
    history = [tool_message("x", "orphan"), assistant_message("after")]
    assert can_split_after(history, 0)


def test_manual_never_considers_index_zero():
    history = [assistant_message("only"), user_message("next")]
    assert compute_compact_count(history, "manual", 1000) == 0


def test_fit_to_window_falls_back_to_the_smallest_split_when_nothing_fits():
    history = [assistant_message(f"m{i}") for i in range(5)]
    assert compute_compact_count(history, "manual", 15, estimate=lambda _m: 100) == 1


def test_reduce_on_overflow_without_a_split_returns_the_whole_length():
    history = [user_message("a"), user_message("b"), user_message("c")]
    assert reduce_compact_on_overflow(history, 1000) == 3


def test_observed_window_remembers_85_percent_of_the_overflowing_request():
    assert observed_window(100_000) == 85_000
    assert observed_window(1) == 1
    assert effective_window(256_000, 85_000) == 85_000
    assert effective_window(0, 85_000) == 85_000
    assert effective_window(64_000, None) == 64_000


def test_the_compaction_module_exports_every_listed_name():
    import agent.compaction

    assert all(hasattr(agent.compaction, name) for name in agent.compaction.__all__)
