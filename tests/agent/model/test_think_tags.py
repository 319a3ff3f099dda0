"""`<think>` blocks in a model's text (agent/model/_think_tags.py): taken out wherever the chunks
cut the tags, and only a leading block."""

from __future__ import annotations

import pytest

from agent.model._think_tags import ThinkTags, split_think_tags

ANSWERS = [
    ("<think>step one</think>\n\nAll done.", "step one", "All done."),
    ("  \n<think>a < b</think>All done.", "a < b", "All done."),
    ("<think>never closed", "never closed", ""),
    ("All done. <think>not reasoning</think>", None, "All done. <think>not reasoning</think>"),
    ("<b>bold</b> and <thinking>", None, "<b>bold</b> and <thinking>"),
    ("<thin", None, "<thin"),
]


@pytest.mark.parametrize(("content", "reasoning", "text"), ANSWERS)
def test_every_way_of_cutting_the_answer_in_two_or_three_reads_the_same(content, reasoning, text):
    assert split_think_tags(content) == (reasoning, text)
    for first in range(len(content) + 1):
        for second in range(first, len(content) + 1):
            tags = ThinkTags()
            pieces = [content[:first], content[first:second], content[second:]]
            shown = "".join(tags.feed(piece) for piece in pieces) + tags.finish()
            assert shown == text
            assert ("".join(tags.reasoning) if tags.found else None) == reasoning
