"""`!skill <name> [args]`: what counts as a skill request in a thread message."""

from __future__ import annotations

import pytest

from gateway.listeners._skill_words import SkillRequest, skill_request


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("!skill review", SkillRequest("review", "")),
        ("  !SKILL review src/app.py  --fast ", SkillRequest("review", "src/app.py  --fast")),
        ('!skill release "v2 beta" now', SkillRequest("release", '"v2 beta" now')),
        ("!skill", SkillRequest("", "")),
        ("please !skill review", None),
        ("!skills", None),
        ("", None),
    ],
)
def test_skill_requests(text: str, expected: SkillRequest | None):
    assert skill_request(text) == expected
