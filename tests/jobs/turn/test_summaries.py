"""What a card shows of a call's arguments, whatever the model wrote."""

from __future__ import annotations

from jobs.turn.summaries import full_arguments, short_arguments


def test_arguments_nested_past_the_parsers_depth_are_shown_as_written():
    # json recurses per bracket: 100,000 of them raised RecursionError out of the card's summary.
    nested = '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert short_arguments("shell", nested, limit=20) == nested[:19] + "…"
    assert full_arguments("shell", nested) == nested


def test_a_known_tools_key_argument_leads_and_others_are_compact_json():
    assert short_arguments("shell", '{"command": "make  test"}') == "command: make test"
    assert short_arguments("other", '{"a": 1, "b": [2]}') == '{"a":1,"b":[2]}'
    assert full_arguments("shell", '{"command": "make test"}') == "make test"
