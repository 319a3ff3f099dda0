"""Hypothesis strategies for context histories: random messages, and turns shaped like the loop's."""

from __future__ import annotations

from hypothesis import strategies as st

from agent.messages import ImageURLPart, MediaURL, Message, Origin, TextPart, ThinkPart, ToolCall

CALL_IDS = ("c1", "c2", "c3", "c4")  # few, so ids are reused across exchanges
TEXTS = ("", " ", "\n\t", "hi", "go on", "Tool output is empty.", " Tool output is empty. ")
ORIGINS = (
    None,
    Origin(kind="user"),
    Origin(kind="user"),
    Origin(kind="injection", variant="host"),
    Origin(kind="skill_activation", trigger="user-slash"),
    Origin(kind="compaction_summary"),
)
SCHEMA = {"name": "mcp__srv__query", "description": "d", "parameters": {"type": "object"}}

text_parts = st.builds(TextPart, text=st.sampled_from(TEXTS))
think_parts = st.builds(
    ThinkPart, think=st.sampled_from(("", " ", "hmm")), encrypted=st.sampled_from((None, "sig"))
)
image_parts = st.just(ImageURLPart(image_url=MediaURL(url="data:x")))
contents = st.lists(st.one_of(text_parts, text_parts, think_parts, image_parts), max_size=3)
partials = st.sampled_from((None, None, None, None, True, False))
entry_ids = st.sampled_from((None, "17-0"))
calls = st.builds(ToolCall, id=st.sampled_from(CALL_IDS), name=st.just("Read"), arguments=st.just("{}"))

users = st.builds(
    Message, role=st.just("user"), content=contents, origin=st.sampled_from(ORIGINS), id=entry_ids
)
assistants = st.builds(
    Message,
    role=st.just("assistant"),
    content=contents,
    tool_calls=st.lists(calls, max_size=3),
    partial=partials,
    id=entry_ids,
)
tools = st.builds(
    Message,
    role=st.just("tool"),
    content=contents,
    tool_call_id=st.sampled_from((*CALL_IDS, None)),
    is_error=st.sampled_from((None, True, False)),
    note=st.sampled_from((None, "", "<system>n</system>")),
    partial=partials,
    id=entry_ids,
)
schemas = st.builds(
    Message,
    role=st.just("system"),
    content=st.just([]),
    tools=st.just([SCHEMA]),
    origin=st.just(Origin(kind="injection", variant="dynamic_tool_schema")),
)
random_messages = st.one_of(users, assistants, tools, tools, schemas)


def _text(text: str) -> list[TextPart]:
    return [TextPart(text=text)]


@st.composite
def loop_histories(draw: st.DrawFn) -> list[Message]:
    """Turns as the loop writes them, damaged: results missing, doubled, late or out of order,
    ids reused, reminders and steering in between, partial (open) steps."""
    history: list[Message] = []
    fresh = iter(range(1_000_000))
    for _ in range(draw(st.integers(0, 4))):
        for _ in range(draw(st.integers(1, 2))):
            history.append(draw(users))
        for _ in range(draw(st.integers(0, 3))):
            ids = [
                draw(st.sampled_from(CALL_IDS)) if draw(st.integers(0, 5)) == 0 else f"k{next(fresh)}"
                for _ in range(draw(st.integers(0, 3)))
            ]
            history.append(
                Message(
                    role="assistant",
                    content=draw(contents),
                    tool_calls=[ToolCall(id=i, name="Read", arguments="{}") for i in ids],
                    partial=draw(partials),
                )
            )
            results = [
                Message(role="tool", content=draw(contents), tool_call_id=i, is_error=draw(st.booleans()))
                for i in ids
                for _ in range(draw(st.sampled_from((1, 1, 1, 0, 2))))
            ]
            results = draw(st.permutations(results))
            if results and draw(st.booleans()):
                reminder = Message(role="user", content=_text("<system-reminder>"), origin=ORIGINS[3])
                results.insert(draw(st.integers(0, len(results))), reminder)
            history.extend(results)
        if draw(st.booleans()):
            history.append(Message(role="assistant", content=_text("done")))
    return history


histories = st.one_of(st.lists(random_messages, max_size=24), loop_histories())
