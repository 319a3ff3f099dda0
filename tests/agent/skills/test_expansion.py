"""Argument expansion (context-core.md §6): named, positional, indexed placeholders, variables."""

from __future__ import annotations

import pytest

from agent.skills import expand_arguments, split_arguments


def test_tokens_group_quoted_words():
    assert split_arguments('fix "the flaky test" now') == ["fix", "the flaky test", "now"]
    assert split_arguments("unbalanced 'quote here") == ["unbalanced", "'quote", "here"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("all: $ARGUMENTS", 'all: src/app.py "fast mode"'),
        ("first: $ARGUMENTS[0], second: $ARGUMENTS[1]", "first: src/app.py, second: fast mode"),
        ("first: $0, second: $1, third: [$2]", "first: src/app.py, second: fast mode, third: []"),
        ("file $file in $mode", "file src/app.py in fast mode"),
        ("$files is not $file", "$files is not src/app.py"),
    ],
)
def test_placeholders(body: str, expected: str):
    assert expand_arguments(body, 'src/app.py "fast mode"', names=["file", "mode"]) == expected


def test_without_a_placeholder_the_arguments_are_appended():
    assert expand_arguments("Do the thing.", "  now please ") == "Do the thing.\n\nARGUMENTS: now please"
    assert expand_arguments("Do the thing.", "   ") == "Do the thing."


def test_a_placeholder_without_a_value_still_counts_as_used():
    assert expand_arguments("maybe [$1]", "one") == "maybe []"


def test_variables_in_both_spellings_and_no_double_expansion():
    body = "${THREADLINE_SKILL_DIR}/run.sh ${KIMI_SKILL_DIR} ${THREADLINE_SESSION_ID} ${KIMI_SESSION_ID} $0"
    expanded = expand_arguments(body, "'$1 literal'", skill_dir="/skills/x", session_id="T:C:1.2")
    assert expanded == "/skills/x/run.sh /skills/x T:C:1.2 T:C:1.2 $1 literal"


def test_variables_alone_do_not_count_as_argument_placeholders():
    assert expand_arguments("in ${THREADLINE_SKILL_DIR}", "x", skill_dir="/d") == "in /d\n\nARGUMENTS: x"
