"""Splitting answers: within the limit, on paragraph and fence boundaries, nothing lost."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.render.markdown import segments, split_markdown

FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def fences_balanced(chunk: str) -> bool:
    """CommonMark's rule: a fence closes with a bare run of its own character, at least as long."""
    opening = None
    for line in chunk.split("\n"):
        match = FENCE_LINE.match(line)
        if opening is None and match:
            opening = match.group(1)
        elif opening and set(line.strip()) == {opening[0]} and len(line.strip()) >= len(opening):
            opening = None
    return opening is None


def words(text: str) -> list[str]:
    return [w for w in text.split() if not FENCE_LINE.match(w)]


def test_short_text_is_one_chunk():
    assert split_markdown("hello **world**", 100) == ["hello **world**"]


def test_paragraphs_are_packed_and_cut_only_between_them():
    paragraphs = [f"paragraph {i} " + "x" * 40 for i in range(6)]
    chunks = split_markdown("\n\n".join(paragraphs), 120)
    assert chunks == ["\n\n".join(paragraphs[i : i + 2]) for i in range(0, 6, 2)]


def test_a_code_block_that_fits_is_never_split_from_itself():
    code = "```python\n" + "\n".join(f"x = {i}" for i in range(10)) + "\n```"
    text = "intro " * 10 + "\n\n" + code + "\n\noutro"
    chunks = split_markdown(text, len(code) + 5)
    assert code in chunks


def test_a_long_code_block_is_reopened_and_closed_in_every_chunk():
    code = "```sh\n" + "\n".join(f"echo line {i}" for i in range(200)) + "\n```"
    chunks = split_markdown(code, 300)
    assert len(chunks) > 5
    assert all(c.startswith("```sh\n") and c.endswith("\n```") and len(c) <= 300 for c in chunks)
    body = [line for c in chunks for line in c.split("\n")[1:-1]]
    assert body == [f"echo line {i}" for i in range(200)]


def test_an_unclosed_fence_runs_to_the_end_and_is_closed():
    assert segments("text\n\n```\ncode\nmore")[-1].text == "```\ncode\nmore\n```"


def test_a_line_longer_than_the_limit_is_cut_at_spaces():
    long_line = " ".join(f"word{i}" for i in range(400))
    chunks = split_markdown(long_line, 200)
    assert all(len(c) <= 200 for c in chunks) and words("\n".join(chunks)) == long_line.split()


def test_a_limit_too_small_for_a_fence_is_refused():
    with pytest.raises(ValueError):
        split_markdown("x", 8)


paragraph = st.text(alphabet=st.sampled_from("abc xyz*_`~-#>\t"), min_size=1, max_size=300).filter(str.strip)
code = st.builds(
    lambda lang, lines: f"```{lang}\n" + "\n".join(lines) + "\n```",
    st.sampled_from(["", "python", "sh"]),
    st.lists(st.text(alphabet="abc def()=;", max_size=120), max_size=40),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(paragraph, code), min_size=1, max_size=25), st.integers(min_value=60, max_value=2000)
)
def test_every_chunk_fits_keeps_fences_balanced_and_loses_no_word(parts, limit):
    text = "\n\n".join(parts)
    chunks = split_markdown(text, limit)
    assert all(0 < len(c) <= limit for c in chunks)
    assert all(fences_balanced(c) for c in chunks)
    assert words("\n".join(chunks)) == words(text)
