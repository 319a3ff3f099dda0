"""The memoised projected form: unvalidated wire copies must behave like validated messages."""

import gc
import sys
import weakref

from agent.messages import Message, Origin, TextPart, ToolCall
from agent.projection._projected_message import (
    CONTEXT_FIELDS,
    WIRE_FIELDS,
    memo_of,
    projected,
    unavailable_result,
    wire_message,
)
from agent.projection.projector import project
from agent.projection.rendering import render_tool_result
from agent.tokens import estimate_message

SOURCE = Message(
    role="assistant",
    content=[TextPart(text="hi")],
    tool_calls=[ToolCall(id="c1", name="Read", arguments="{}")],
    id="5-0",
    provider_message_id="resp-1",
    origin=Origin(kind="user"),
    is_error=False,
    note="n",
)


def test_every_message_field_is_either_kept_or_stripped():
    assert set(Message.model_fields) == WIRE_FIELDS | CONTEXT_FIELDS
    assert not WIRE_FIELDS & CONTEXT_FIELDS


def test_a_wire_copy_equals_dumps_and_copies_like_a_validated_message():
    content = [TextPart(text="other")]
    copy = wire_message(SOURCE, content)
    validated = Message(role="assistant", content=content, tool_calls=SOURCE.tool_calls)
    assert copy == validated
    assert copy.model_dump() == validated.model_dump()
    assert copy.model_dump(mode="json", exclude_none=True) == validated.model_dump(
        mode="json", exclude_none=True
    )
    assert Message.model_validate(copy.model_dump()) == validated
    assert copy.model_copy(update={"name": "x"}) == validated.model_copy(update={"name": "x"})
    assert estimate_message(copy) == estimate_message(validated)
    assert copy.memo() is memo_of(copy)


def test_a_wire_copy_leaves_the_source_alone():
    before = SOURCE.model_dump()
    wire_message(SOURCE, [])
    assert SOURCE.model_dump() == before


def test_an_untouched_message_is_its_own_wire_form_without_a_reference_cycle():
    message = Message(role="assistant", content=[TextPart(text="hi")])
    assert project([Message(role="user", content=[TextPart(text="q")]), message])[1] is message
    assert sys.getrefcount(message) == 2  # the name and the call's argument: the memo holds no ref
    alive = weakref.ref(message)
    gc.disable()
    try:
        del message
        assert alive() is None  # freed by reference counting, no cyclic collection needed
    finally:
        gc.enable()


def test_memo_of_is_the_message_memo():
    message = Message(role="user", content=[TextPart(text="q")])
    assert memo_of(message) is message.memo()
    assert memo_of(message.model_copy(update={"name": "n"})) == {}


def test_a_changed_copy_is_projected_afresh():
    message = Message(role="tool", content=[TextPart(text="out")], tool_call_id="c1")
    projected(message)
    failed = message.model_copy(update={"is_error": True})
    assert projected(failed)[1].content[0].text == "<system>ERROR: Tool execution failed.</system>\nout"


def test_placeholder_is_shared_and_exact():
    placeholder = unavailable_result("c9")
    assert placeholder is unavailable_result("c9")
    assert placeholder.model_dump(mode="json", exclude_none=True) == {
        "role": "tool",
        "content": [
            {
                "type": "text",
                "text": "Tool result is not available in the current context. "
                "Do not assume the tool completed successfully.",
            }
        ],
        "tool_calls": [],
        "tool_call_id": "c9",
    }


def test_render_tool_result_returns_a_new_list():
    parts = [TextPart(text="a"), TextPart(text="b")]
    rendered = render_tool_result(parts)
    assert rendered == parts and rendered is not parts


def test_blank_error_text_keeps_its_whitespace_after_the_status():
    assert render_tool_result("  ", is_error=True) == [
        TextPart(text="<system>ERROR: Tool execution failed.</system>\n  ")
    ]


def test_all_blank_parts_render_as_empty_status_with_the_note_as_its_own_line():
    assert render_tool_result([TextPart(text=" "), TextPart(text="")], note="N") == [
        TextPart(text="<system>Tool output is empty.</system>\nN")
    ]


def test_a_merged_user_message_is_memoised_for_the_same_run_only():
    first, second, third = (
        Message(role="user", content=[TextPart(text=t)], origin=Origin(kind="user")) for t in "abc"
    )
    merged = project([first, second])[0]
    assert project([first, second])[0] is merged
    assert project([first, third])[0].content == [TextPart(text="a\n\nc")]
    assert project([first, second, third])[0].content == [TextPart(text="a\n\nb\n\nc")]
