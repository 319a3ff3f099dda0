"""Broadcast mentions the model writes reach Slack broken (gateway.render.mentions), every form
an attacker would try, and the same however a growing text is cut into pieces."""

from __future__ import annotations

import pytest

from gateway.render.mentions import BREAK, LOOKAHEAD, PostingRules, neutralise, neutralised_between, settled
from gateway.render.text import SECTION_LIMIT, section


@pytest.mark.parametrize(
    ("written", "sent"),
    [
        ("<!channel>", f"<{BREAK}!channel>"),
        ("<!channel|label>", f"<{BREAK}!channel|label>"),
        ("<!here|x>", f"<{BREAK}!here|x>"),
        ("<!HERE>", f"<{BREAK}!HERE>"),
        ("<!everyone>", f"<{BREAK}!everyone>"),
        ("<!group>", f"<{BREAK}!group>"),  # the old name of <!channel>
        ("<!subteam^S0123|@oncall>", f"<{BREAK}!subteam^S0123|@oncall>"),
        ("<!subteam^S0123>", f"<{BREAK}!subteam^S0123>"),
        ("@channel @Here, @everyone!", f"@{BREAK}channel @{BREAK}Here, @{BREAK}everyone!"),
        ("`<!channel>` in code", f"`<{BREAK}!channel>` in code"),
        ("<<!here>>", f"<<{BREAK}!here>>"),
        # what notifies one person or nobody stays as written
        ("<@U0123|ana> <@W9>", "<@U0123|ana> <@W9>"),
        ("<#C0123|general>", "<#C0123|general>"),
        ("<!date^1700000000^{date_short}|Nov 14>", "<!date^1700000000^{date_short}|Nov 14>"),
        ("<!DOCTYPE html> <!-- x --> a@b.example", "<!DOCTYPE html> <!-- x --> a@b.example"),
        ("@channels", f"@{BREAK}channels"),  # a longer word is broken too: invisible, harmless
    ],
)
def test_each_broadcast_form_is_broken_after_its_first_character(written: str, sent: str) -> None:
    assert neutralise(written) == sent
    assert neutralise(sent) == sent  # already broken: nothing more happens


def test_a_growing_text_cut_anywhere_sends_the_same_as_the_whole() -> None:
    text = "Ping <!channel|all> and <!subteam^S1|@team> then @here and <@U1>, <!here>."
    whole = neutralise(text)
    for grown in range(len(text) + 1):
        partial = text[:grown]
        for cut in range(len(partial) + 1):
            end = settled(partial, cut)
            assert end <= cut
            sent = neutralised_between(partial, 0, end)
            assert whole.startswith(sent), (partial, cut)
            assert whole.startswith(sent + neutralised_between(text, end, len(text)))


def test_only_a_mark_whose_fate_is_still_open_is_held_back() -> None:
    assert settled("see <!chan", 10) == 4
    assert settled("mail @", 6) == 5
    assert settled("x" * 20 + "<!channel> done", 35) == 35
    assert settled("<" + "x" * LOOKAHEAD, LOOKAHEAD + 1) == LOOKAHEAD + 1


def test_rules_break_every_text_of_a_message_unless_the_channel_allows_broadcasts() -> None:
    arguments = {
        "text": "<!here>",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": "@channel"}},
            {"type": "context", "elements": [{"type": "plain_text", "text": "<!everyone>"}]},
            {
                "type": "actions",
                "elements": [
                    {"type": "button", "value": "<!here>", "text": {"type": "plain_text", "text": "Go"}}
                ],
            },
        ],
    }
    sent = PostingRules().arguments(arguments)
    assert sent["text"] == f"<{BREAK}!here>"
    assert sent["blocks"][0]["text"]["text"] == f"@{BREAK}channel"
    assert sent["blocks"][1]["elements"][0]["text"] == f"<{BREAK}!everyone>"
    assert sent["blocks"][2]["elements"][0]["value"] == "<!here>"  # a button's value is data, not shown
    assert PostingRules(broadcasts=True).arguments(arguments) == arguments
    assert PostingRules().arguments({"markdown_text": "@here"}) == {"markdown_text": f"@{BREAK}here"}


def test_a_section_written_up_to_slacks_limit_stays_within_it_once_broken() -> None:
    full = section("@here " * (SECTION_LIMIT // 6))
    sent = PostingRules().arguments({"blocks": [full]})["blocks"][0]
    assert len(full["text"]["text"]) == SECTION_LIMIT and len(sent["text"]["text"]) == SECTION_LIMIT
    assert sent["text"]["text"].startswith(f"@{BREAK}here @{BREAK}here")
