"""compute_compact_count fits the prefix to the window walking forward; the spec walks backward.

Both must agree for every history: here the spec's algorithm (3.4), transcribed line by line,
is the oracle for random histories, windows and limits.
"""

from hypothesis import given
from hypothesis import strategies as st

from agent.compaction.rules import CompactionConfig, can_split_after, compute_compact_count
from agent.messages import Message, ToolCall, assistant_message, tool_message, user_message


def spec_fit_to_window(messages, n, max_size, estimate):
    if max_size <= 0 or n <= 0:
        return n
    total = sum(estimate(messages[i]) for i in range(n))
    if total <= max_size:
        return n
    best = None
    for k in range(n - 1, 0, -1):
        total -= estimate(messages[k])
        if not can_split_after(messages, k - 1):
            continue
        best = k
        if total <= max_size:
            return k
    return best if best is not None else n


def spec_manual(messages, max_size, estimate):
    for i in range(len(messages) - 1, 0, -1):
        if can_split_after(messages, i):
            return spec_fit_to_window(messages, i + 1, max_size, estimate)
    return 0


def spec_auto(messages, max_size, config, estimate):
    recent_messages, recent_user, recent_size, best = 1, 0, 0, None
    while recent_messages < len(messages):
        split = len(messages) - recent_messages - 1
        added = messages[len(messages) - recent_messages]
        if added.role == "user":
            recent_user += 1
        recent_size += estimate(added)
        if can_split_after(messages, split):
            best = split + 1
        if best is not None and (
            recent_messages >= config.max_recent_messages
            or recent_user >= config.max_recent_user_messages
            or recent_size >= max_size * config.max_recent_size_ratio
        ):
            break
        recent_messages += 1
    return spec_fit_to_window(messages, best or 0, max_size, estimate)


@st.composite
def histories(draw):
    """Random mixes of user, plain assistant, orphan tool and exchanges with 0..all results."""
    messages: list[Message] = []
    for turn in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["user", "assistant", "exchange", "orphan"]))
        if kind == "user":
            messages.append(user_message(f"u{turn}"))
        elif kind == "assistant":
            messages.append(assistant_message(f"a{turn}"))
        elif kind == "orphan":
            messages.append(tool_message(f"o{turn}", "r"))
        else:
            calls = [ToolCall(id=f"c{turn}_{k}", name="Read") for k in range(draw(st.integers(1, 3)))]
            messages.append(assistant_message(tool_calls=calls))
            answered = draw(st.integers(0, len(calls)))
            messages.extend(tool_message(call.id, "r") for call in calls[:answered])
    sizes = draw(st.lists(st.integers(0, 60), min_size=len(messages), max_size=len(messages)))
    return messages, sizes


@given(
    histories(),
    st.integers(-5, 400),
    st.integers(0, 20),
    st.integers(-1, 1),
    st.integers(1, 8),
    st.integers(1, 4),
)
def test_compute_compact_count_matches_the_spec_algorithm(
    history, window, prefix, delta, recent, recent_users
):
    messages, sizes = history
    # Half the time the window sits exactly at (or one off) a prefix sum, where >= vs > matters.
    max_size = window if window % 2 else sum(sizes[:prefix]) + delta
    by_object = {id(message): size for message, size in zip(messages, sizes, strict=True)}

    def estimate(message):
        return by_object[id(message)]

    config = CompactionConfig(max_recent_messages=recent, max_recent_user_messages=recent_users)
    assert compute_compact_count(messages, "manual", max_size, config, estimate) == spec_manual(
        messages, max_size, estimate
    )
    assert compute_compact_count(messages, "auto", max_size, config, estimate) == spec_auto(
        messages, max_size, config, estimate
    )
