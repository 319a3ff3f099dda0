from __future__ import annotations

import pytest

from gateway.links import ThreadRef, parse_thread_link, thread_link


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "https://acme.slack.com/archives/C0123ABC/p1700000000000100",
            ThreadRef("C0123ABC", "1700000000.000100"),
        ),
        (
            "<https://acme.slack.com/archives/C0123ABC/p1700000000000999?thread_ts=1700000000.000100&cid=C0123ABC>",
            ThreadRef("C0123ABC", "1700000000.000100"),
        ),
        (
            "<https://acme.slack.com/archives/D0AB/p1700000000000100|that thread>",
            ThreadRef("D0AB", "1700000000.000100"),
        ),
        (
            "https://acme.slack.com/archives/G0AB/p1700000000000100?thread_ts=junk",
            ThreadRef("G0AB", "1700000000.000100"),
        ),
    ],
)
def test_slack_message_links_point_at_their_thread(text, expected):
    assert parse_thread_link(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "C0123 1700000000.000100", "https://example.com/x", "ftp://a.slack.com/archives/C1/p1700000000000100",
     "https://a.slack.com/archives/C1/p17000000000001", "https://a.slack.com/archives/U1/p1700000000000100"],
)  # fmt: skip
def test_anything_else_is_not_a_thread_link(text):
    assert parse_thread_link(text) is None


def test_thread_link_round_trips():
    link = thread_link("https://acme.slack.com/", "C9", "1700000000.000100")
    assert parse_thread_link(link) == ThreadRef("C9", "1700000000.000100")
